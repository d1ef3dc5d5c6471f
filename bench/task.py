"""The structured-extraction tasks the rows perform, and the project scriptorium runs them from.

- **person** (the reference task, the one a harness outside the project measures): a person's
  ``{name, age, tags}`` from one sentence, ``claude-haiku-4-5``, 512 max tokens, a 3-property
  schema. The floor is the plainest hand-written call.
- **invoice** (the earlier, richer task, kept as a labelled second floor): an invoice into a
  schema of eleven properties (two enums, a nested array of line items), ``claude-sonnet-4-6``,
  the schema sent as ``output_config``.

The loopback server tells the tasks apart by model and answers with :data:`PERSON` or
:data:`INSTANCE` in whatever shape the caller asked for.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "API_KEY",
    "DOCUMENT",
    "INSTANCE",
    "KEY_ENV",
    "MODEL",
    "PERSON",
    "PERSON_MAX_TOKENS",
    "PERSON_MODEL",
    "PERSON_SCHEMA",
    "PERSON_SYSTEM",
    "SCHEMA",
    "SENTENCE",
    "Invoice",
    "Person",
    "make_project",
    "user_message",
]

# --- person: the reference task ------------------------------------------------------------------

PERSON_MODEL = "claude-haiku-4-5"
PERSON_MAX_TOKENS = 512

PERSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "age", "tags"],
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
}

PERSON: dict[str, Any] = {"name": "Ada Lovelace", "age": 36, "tags": ["mathematician", "writer"]}

SENTENCE = (
    "Ada Lovelace, 36, was a mathematician and writer who published the first algorithm meant "
    "for a machine."
)

PERSON_SYSTEM = (
    "Extract the person the user describes as a JSON object with name (string), age (integer) "
    "and tags (array of strings). Reply with the JSON object only."
)


class Person(BaseModel):
    """The person task's output model, for the peers."""

    model_config = ConfigDict(extra="forbid")
    name: str
    age: int
    tags: list[str]


# --- invoice: the earlier, richer task -----------------------------------------------------------

MODEL = "claude-sonnet-4-6"
API_KEY = "sk-bench-not-a-real-key"
KEY_ENV = "BENCH_ANTHROPIC_KEY"

_LINE_ITEM: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["description", "quantity", "unit_price"],
    "properties": {
        "description": {"type": "string"},
        "quantity": {"type": "integer"},
        "unit_price": {"type": "number"},
    },
}

#: Already in the shape the Messages API accepts (every object closed), so the floor and
#: scriptorium send the same schema.
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": [
        "invoice_number",
        "issue_date",
        "due_date",
        "vendor",
        "customer",
        "currency",
        "status",
        "subtotal",
        "tax",
        "total",
        "line_items",
    ],
    "properties": {
        "invoice_number": {"type": "string"},
        "issue_date": {"type": "string"},
        "due_date": {"type": "string"},
        "vendor": {"type": "string"},
        "customer": {"type": "string"},
        "currency": {"type": "string", "enum": ["USD", "EUR", "GBP", "JPY"]},
        "status": {"type": "string", "enum": ["draft", "sent", "paid", "overdue"]},
        "subtotal": {"type": "number"},
        "tax": {"type": "number"},
        "total": {"type": "number"},
        "line_items": {"type": "array", "items": _LINE_ITEM},
    },
}

INSTANCE: dict[str, Any] = {
    "invoice_number": "INV-2026-00417",
    "issue_date": "2026-03-02",
    "due_date": "2026-04-01",
    "vendor": "Northwind Office Supplies Ltd.",
    "customer": "Contoso Research GmbH",
    "currency": "EUR",
    "status": "sent",
    "subtotal": 1185.5,
    "tax": 225.25,
    "total": 1410.75,
    "line_items": [
        {"description": "Ergonomic office chair, black", "quantity": 3, "unit_price": 289.0},
        {"description": "Standing desk converter", "quantity": 1, "unit_price": 249.5},
        {"description": "Printer paper A4, box of 5 reams", "quantity": 4, "unit_price": 17.25},
    ],
}

DOCUMENT = """INVOICE INV-2026-00417
Northwind Office Supplies Ltd. - 14 Harbour Street, Leeds
Bill to: Contoso Research GmbH, Berlin
Issued 2 March 2026, payable within 30 days (by 1 April 2026). Status: sent.

3 x Ergonomic office chair, black ........ EUR 289.00 each
1 x Standing desk converter .............. EUR 249.50
4 x Printer paper A4, box of 5 reams ..... EUR 17.25 each

Subtotal EUR 1,185.50   VAT 19% EUR 225.25   Total due EUR 1,410.75
"""

_INSTRUCTION = "Extract the invoice below into the required structure."


def user_message(document: str = DOCUMENT) -> str:
    """The user message every row sends (scriptorium renders the same text from its template)."""
    return f"{_INSTRUCTION}\n\n{document}"


class LineItem(BaseModel):
    """One invoice line (the peers' output model mirrors :data:`SCHEMA`)."""

    model_config = ConfigDict(extra="forbid")
    description: str
    quantity: int
    unit_price: float


class Invoice(BaseModel):
    """The extraction target for the peers (Instructor, Pydantic AI, langchain)."""

    model_config = ConfigDict(extra="forbid")
    invoice_number: str
    issue_date: str
    due_date: str
    vendor: str
    customer: str
    currency: Literal["USD", "EUR", "GBP", "JPY"]
    status: Literal["draft", "sent", "paid", "overdue"]
    subtotal: float
    tax: float
    total: float
    line_items: list[LineItem]


_PROMPT = """---
description: Extract an invoice (benchmark)
version: 1
profile: bench
inputs:
  type: object
  required: [document]
  properties: {document: {type: string}}
output:
  format: json_schema
  schema: schemas/invoice.schema.json
  strategy: native
---
## user
Extract the invoice below into the required structure.

{{ document }}"""

_PERSON_PROMPT = """---
description: Extract a person (benchmark)
version: 1
profile: bench-person
inputs:
  type: object
  required: [sentence]
  properties: {{sentence: {{type: string}}}}
output:
  format: json_schema
  schema: schemas/person.schema.json
  strategy: {strategy}
---
## system
{system}

## user
{{{{ sentence }}}}"""

_PROFILE = """provider: anthropic
model: {model}
endpoint: {endpoint}
api_key_env: {key_env}
settings: {{max_tokens: {max_tokens}}}
"""


def make_project(endpoint: str, root: Path | None = None) -> Path:
    """A scriptorium project pointing at ``endpoint``: prompts ``person`` (strategy ``native``),
    ``person-prompt`` (strategy ``prompt``) and ``extract`` (the invoice), profiles
    ``bench-person`` and ``bench``."""
    base = Path(tempfile.mkdtemp(prefix="scriptorium-bench-")) if root is None else root
    prompts, profiles = base / "prompts", base / "profiles"
    (prompts / "schemas").mkdir(parents=True, exist_ok=True)
    profiles.mkdir(parents=True, exist_ok=True)
    (prompts / "extract.prompt.md").write_text(_PROMPT, encoding="utf-8")
    (prompts / "schemas" / "invoice.schema.json").write_text(
        json.dumps(SCHEMA, indent=2), encoding="utf-8"
    )
    (prompts / "schemas" / "person.schema.json").write_text(
        json.dumps(PERSON_SCHEMA, indent=2), encoding="utf-8"
    )
    for name, strategy in (("person", "native"), ("person-prompt", "prompt")):
        text = _PERSON_PROMPT.format(strategy=strategy, system=PERSON_SYSTEM)
        (prompts / f"{name}.prompt.md").write_text(text, encoding="utf-8")
    for name, model, max_tokens in (
        ("bench", MODEL, 1024),
        ("bench-person", PERSON_MODEL, PERSON_MAX_TOKENS),
    ):
        profile = _PROFILE.format(
            model=model, endpoint=endpoint, key_env=KEY_ENV, max_tokens=max_tokens
        )
        (profiles / f"{name}.yaml").write_text(profile, encoding="utf-8")
    return base
