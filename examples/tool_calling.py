"""An agent loop with the demo model: it must call a Python function, sees the result, and answers.

The first turn is constrained to a tool call (``tool_choice="required"``) whose arguments
follow the tool's JSON Schema; the second turn, after the tool's result, to free text.
Run: ``.venv/bin/python examples/tool_calling.py``.
"""

from __future__ import annotations

import json

from gramalign.integrations.smollm2 import load_smollm2
from gramalign.integrations.tools import generate_with_tools


def get_weather(city: str, unit: str = "celsius") -> dict:
    """A stand-in for a real weather service."""
    temperatures = {"paris": 14, "oslo": 3, "cairo": 29}
    celsius = temperatures.get(city.lower(), 20)
    return {"city": city, "temperature": celsius if unit == "celsius" else round(celsius * 9 / 5 + 32),
            "unit": unit, "sky": "cloudy" if celsius < 15 else "sunny"}


TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "additionalProperties": False, "required": ["city"],
                   "properties": {"city": {"type": "string", "minLength": 1, "maxLength": 40},
                                  "unit": {"enum": ["celsius", "fahrenheit"]}}}}}]
FUNCTIONS = {"get_weather": get_weather}


def main() -> None:
    model, tokenizer = load_smollm2()
    messages = [{"role": "user", "content": "What is the weather like in Paris right now?"}]
    turn = generate_with_tools(model, tokenizer, messages, TOOLS, tool_choice="required",
                               parallel_tool_calls=False, max_new_tokens=80)
    for call in turn.calls:
        result = FUNCTIONS[call.name](**call.arguments)
        print(f"model called {call.name}({call.arguments}) -> {result}")
        messages.append({"role": "assistant", "content": json.dumps({"name": call.name, "arguments": call.arguments})})
        messages.append({"role": "user", "content": f"The tool {call.name} returned: {json.dumps(result)}. "
                                                    "Answer my question in one sentence."})
    final = generate_with_tools(model, tokenizer, messages, TOOLS, tool_choice="none", max_new_tokens=80)
    print("answer:", final.content)


if __name__ == "__main__":
    main()
