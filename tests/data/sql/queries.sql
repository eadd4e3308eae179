CREATE TABLE IF NOT EXISTS departments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    city VARCHAR(64) DEFAULT 'London', -- where the office is
    budget NUMERIC(12, 2) DEFAULT 0.0 CHECK (budget >= 0)
);

CREATE TABLE employees (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT UNIQUE COLLATE NOCASE,
    salary REAL NOT NULL DEFAULT 30000,
    hired_at TEXT DEFAULT CURRENT_TIMESTAMP,
    department_id INTEGER REFERENCES departments(id) ON DELETE SET NULL ON UPDATE CASCADE,
    manager_id INTEGER,
    FOREIGN KEY (manager_id) REFERENCES employees(id)
);

create table if not exists order_items (
    order_id integer not null,
    product_id integer not null,
    quantity integer not null default 1 check (quantity > 0),
    unit_price double precision,
    constraint pk_order_items primary key (order_id, product_id),
    constraint fk_product foreign key (product_id) references products (id) on delete restrict
);

CREATE TEMP TABLE recent_orders AS SELECT * FROM orders WHERE created_at > date('now', '-7 days');

CREATE TABLE kv ("key" TEXT PRIMARY KEY DESC, value BLOB, updated INTEGER DEFAULT (strftime('%s', 'now')));

CREATE UNIQUE INDEX IF NOT EXISTS idx_employees_email ON employees (email);

create index idx_orders_customer on orders (customer_id, created_at desc) where status <> 'cancelled';

CREATE VIEW IF NOT EXISTS high_earners (name, salary) AS
    SELECT name, salary FROM employees WHERE salary > 100000;

SELECT name FROM employees WHERE salary > 50000;

SELECT d.name, COUNT(*) AS headcount
FROM employees e
JOIN departments d ON d.id = e.department_id
GROUP BY d.name
ORDER BY headcount DESC;

select e.name, d.city from employees as e left join departments as d on e.department_id = d.id;

SELECT DISTINCT city FROM departments ORDER BY city ASC;

SELECT * FROM employees WHERE department_id IS NULL;

SELECT id, name FROM employees WHERE manager_id IS NOT NULL AND salary BETWEEN 40000 AND 90000;

SELECT name, salary * 1.1 AS raised FROM employees WHERE name LIKE 'A%' ORDER BY raised DESC LIMIT 5;

Select e.*, d.name As department From employees e Inner Join departments d On e.department_id = d.id;

SELECT COUNT(DISTINCT department_id) FROM employees;

SELECT department_id, AVG(salary), MIN(salary), MAX(salary), SUM(salary)
FROM employees
GROUP BY department_id
HAVING AVG(salary) > 60000;

SELECT name FROM employees WHERE department_id IN (SELECT id FROM departments WHERE city = 'Paris');

SELECT name FROM employees e WHERE EXISTS (SELECT 1 FROM departments d WHERE d.id = e.department_id AND d.budget > 1e6);

SELECT name, (SELECT COUNT(*) FROM employees m WHERE m.manager_id = e.id) AS reports FROM employees e;

SELECT name FROM employees WHERE salary > (SELECT AVG(salary) FROM employees);

SELECT name,
       CASE
           WHEN salary < 40000 THEN 'low'
           WHEN salary < 80000 THEN 'medium'
           ELSE 'high'
       END AS band
FROM employees;

SELECT CASE department_id WHEN 1 THEN 'sales' WHEN 2 THEN 'engineering' END FROM employees;

SELECT CAST(salary AS INTEGER), CAST('42' AS REAL), CAST(hired_at AS TEXT) FROM employees;

SELECT first_name || ' ' || last_name AS full_name FROM customers;

SELECT id, price * quantity - discount AS total, price % 7, -price, +quantity FROM order_items;

SELECT * FROM products WHERE (price > 10 OR stock = 0) AND NOT discontinued;

SELECT * FROM products WHERE category NOT IN ('toys', 'games') AND name NOT LIKE '%test%';

SELECT * FROM events WHERE happened_at NOT BETWEEN '2024-01-01' AND '2024-12-31';

SELECT o.id, c.name, SUM(oi.quantity * oi.unit_price) AS amount
FROM orders o
JOIN customers c ON c.id = o.customer_id
LEFT OUTER JOIN order_items oi ON oi.order_id = o.id
WHERE o.status = 'shipped'
GROUP BY o.id, c.name
ORDER BY amount DESC, o.id
LIMIT 20 OFFSET 40;

SELECT a.id, b.id FROM a CROSS JOIN b;

SELECT * FROM orders JOIN customers USING (customer_id);

SELECT * FROM orders NATURAL JOIN customers;

SELECT p.name, s.total FROM products p, (SELECT product_id, SUM(quantity) AS total FROM order_items GROUP BY product_id) s WHERE s.product_id = p.id;

WITH regional AS (
    SELECT region, SUM(amount) AS total_sales
    FROM orders
    GROUP BY region
), top_regions AS (
    SELECT region FROM regional WHERE total_sales > (SELECT SUM(total_sales) / 10 FROM regional)
)
SELECT region, product, SUM(quantity) AS product_units
FROM orders
WHERE region IN (SELECT region FROM top_regions)
GROUP BY region, product;

WITH RECURSIVE counter(n) AS (
    SELECT 1
    UNION ALL
    SELECT n + 1 FROM counter WHERE n < 100
)
SELECT n FROM counter;

WITH RECURSIVE chain(id, manager_id, depth) AS (
    SELECT id, manager_id, 0 FROM employees WHERE id = ?
    UNION ALL
    SELECT e.id, e.manager_id, c.depth + 1 FROM employees e JOIN chain c ON e.id = c.manager_id
)
SELECT * FROM chain ORDER BY depth;

SELECT name FROM customers UNION SELECT name FROM suppliers ORDER BY name;

SELECT email FROM customers INTERSECT SELECT email FROM newsletter_subscribers;

SELECT id FROM products EXCEPT SELECT product_id FROM order_items;

SELECT city FROM customers UNION ALL SELECT city FROM suppliers UNION ALL SELECT city FROM departments;

SELECT name, salary, RANK() OVER (PARTITION BY department_id ORDER BY salary DESC) AS salary_rank FROM employees;

SELECT day, SUM(amount) OVER (ORDER BY day) AS running_total FROM daily_sales;

SELECT COUNT(*) FILTER (WHERE status = 'open') AS open_tickets, COUNT(*) AS all_tickets FROM tickets;

SELECT strftime('%Y-%m', created_at) AS month, COUNT(*) FROM orders GROUP BY month ORDER BY month;

SELECT date('now'), datetime('now', 'localtime'), julianday('2024-05-17') - julianday(created_at) FROM orders;

SELECT COALESCE(nickname, first_name, 'anonymous'), IFNULL(phone, '') FROM customers;

SELECT upper(substr(name, 1, 1)) || lower(substr(name, 2)) AS pretty FROM customers;

SELECT replace(title, 'colour', 'color'), length(title), trim(title) FROM articles;

SELECT group_concat(name, ', ') FROM employees WHERE department_id = :dept;

SELECT json_extract(payload, '$.user.id') AS user_id FROM webhooks WHERE json_valid(payload);

SELECT round(avg(rating), 2) AS average_rating, total(rating) FROM reviews WHERE product_id = @product;

SELECT sku FROM products WHERE sku LIKE 'SALE\_%' ESCAPE '\' AND name NOT LIKE '%!%%' ESCAPE '!';

SELECT * FROM logs WHERE message GLOB '*ERROR*' AND level NOT GLOB 'DEBUG*';

SELECT * FROM users WHERE name = 'O''Brien' OR name = 'D''Angelo';

SELECT "order", "group" FROM "weird table" WHERE "select" = 1;

SELECT * FROM main.users WHERE active = TRUE AND deleted = FALSE;

SELECT * FROM files WHERE size > 0x1000 AND ratio < .75 AND score >= 2.5E+3;

SELECT name FROM employees WHERE name COLLATE NOCASE = 'alice' ORDER BY name COLLATE NOCASE;

SELECT * FROM sessions WHERE token = $token AND expires_at > CURRENT_TIMESTAMP;

SELECT * FROM measurements WHERE value IS NOT 0 AND taken_on = CURRENT_DATE;

SELECT id FROM tasks WHERE priority = ?1 OR owner = ?2 LIMIT ?3;

SELECT a, b FROM t LIMIT 10, 20;

SELECT ALL name FROM employees;

SELECT *
FROM orders o
WHERE NOT EXISTS (SELECT 1 FROM payments p WHERE p.order_id = o.id) -- unpaid
  AND o.created_at < date('now', '-30 days');

SELECT 1 + 2 * 3 - 4 / 2 % 3, (1 + 2) * 3, 10 = 10 == 1, 3 != 4, 3 <> 4, 1 < 2, 2 <= 2, 3 > 2, 3 >= 3;

SELECT abs(-5), -(-5), ~5, 'abc' || 'def' || 123;

select COUNT(*) from Employees where Salary>40000 and Department_ID=1;

INSERT INTO departments (name, city) VALUES ('Engineering', 'Berlin');

INSERT INTO employees (name, email, salary, department_id) VALUES
    ('Alice', 'alice@example.com', 95000, 1),
    ('Bob', 'bob@example.com', 62000.50, 2),
    ('Zoë', NULL, 48000, NULL);

insert into audit_log select id, 'deleted', current_timestamp from employees where department_id = 3;

INSERT OR IGNORE INTO tags (name) VALUES ('sql'), ('python'), ('lark');

INSERT OR REPLACE INTO kv ("key", value) VALUES (?, ?);

REPLACE INTO settings (name, value) VALUES ('theme', 'dark');

INSERT INTO counters DEFAULT VALUES;

INSERT INTO users (name, email) VALUES ('carol', 'carol@example.com') RETURNING id, created_at;

WITH new_rows AS (SELECT * FROM staging WHERE valid = 1) INSERT INTO target SELECT * FROM new_rows;

UPDATE employees SET salary = salary * 1.05 WHERE department_id = 2;

update products set price = round(price * 0.9, 2), updated_at = current_timestamp where category = 'clearance' returning id, price;

UPDATE OR ROLLBACK accounts SET balance = balance - 100 WHERE id = :from_account AND balance >= 100;

UPDATE inventory AS i SET quantity = i.quantity - s.sold FROM (SELECT product_id, SUM(quantity) AS sold FROM sales GROUP BY product_id) AS s WHERE s.product_id = i.product_id;

DELETE FROM sessions WHERE expires_at < CURRENT_TIMESTAMP;

delete from employees where id not in (select manager_id from employees where manager_id is not null);

DELETE FROM logs WHERE created_at < date('now', '-90 days') RETURNING id;

DROP TABLE IF EXISTS recent_orders;

DROP INDEX idx_orders_customer;

DROP VIEW IF EXISTS high_earners;

SELECT name
FROM employees /* only the current staff,
                  not the contractors */
WHERE terminated_at IS NULL
ORDER BY hired_at;

SELECT e.name AS employee, m.name AS manager
FROM employees e LEFT JOIN employees m ON m.id = e.manager_id
WHERE e.department_id = (SELECT id FROM departments WHERE name = 'Sales')
ORDER BY manager, employee;

SELECT customer_id, COUNT(*) AS orders, MAX(created_at) AS last_order
FROM orders
GROUP BY customer_id
HAVING COUNT(*) >= 3 AND MAX(created_at) > '2024-01-01'
ORDER BY orders DESC
LIMIT 100;

SELECT p.category, p.name, p.price
FROM products p
WHERE p.price = (SELECT MAX(p2.price) FROM products p2 WHERE p2.category = p.category);

SELECT strftime('%W', o.created_at) AS week, c.country, COUNT(DISTINCT o.customer_id) AS buyers
FROM orders AS o INNER JOIN customers AS c ON o.customer_id = c.id
WHERE o.total > 0 AND c.country IN ('DE', 'FR', 'IT')
GROUP BY week, c.country;

SELECT t.title, a.name AS author FROM books t JOIN authors a ON a.id = t.author_id WHERE t.published BETWEEN 1990 AND 1999 AND t.title LIKE '%SQL%';

SELECT * FROM products WHERE id = 1; SELECT * FROM products WHERE id = 2;

SELECT 'semicolon-free string', "quoted ""identifier""" FROM t;

SeLeCt DiStInCt category FrOm products WhErE price>=10 oRdEr By category;
