"""A tolerant JSON reader: the grammar behind the lenient parser.

It reads one JSON value and accepts, besides strict JSON, the slips language models make. Each slip it
accepts is recorded in ``fixes`` under a stable name (``internal_docs/validation.md`` lists them).

Where a slip can be read two ways, the reader does not guess: it asks :meth:`.cursor.Cursor.choose`, which
follows the ``choices`` it was given and records in ``points`` how many alternatives each spot had.
:mod:`scriptorium.validate.json.readings` runs the reader once per combination, so every plausible
reading of a text is known and the lenient parser can apply its rule (one value, or the one the
schema accepts). The spots that branch:

- a quote that may close a string or be part of it: once the string has shown an unescaped quote
  (``"a "b", "c"]``), when two quotes stand side by side (``"5"" wide"``), when a number, literal
  or ``word:`` follows (``["" null]``: a comma may be missing), a smart quote that may close a
  straight-quoted string, a quote in an array item that may close it before an item whose opening
  quote is missing (``["a" b", "c"]``), and a quote after an escaped backslash (``\\\\"``: an
  escaped backslash, or an over-escaped quote);
- a string opened by doubled quotes (``""key""``): quotes inside the text, or doubled delimiters
  (decided once per text: every doubled opener reads the same way);
- a closing bracket of the wrong kind: it replaces the expected one (``[1, 2}``), or the expected
  one is missing before it (``{"a": [1, 2}``); an empty container closed by the wrong kind
  (``{]``) is ``{}`` or ``[]``;
- the outermost bracket, when members or items follow it (``{"a": 1}, "b": 2}``): the value closed
  there (what follows continues it, so that reading is never an answer by itself), or the bracket
  is stray;
- two numbers separated by spaces on one line (``[1 2]``: two items, or ``[12]``), only when a
  schema is there to tell (``guided``); without one the reader refuses with ``ambiguous``;
- digit groups with a comma (``2,000.50``: one number, or a number and another item);
- a parenthesised single value (``(1)``: Python's ``1``, or a one-item tuple);
- adjacent strings written Python's way (``'a' 'b'``: one concatenated string, or a missing comma);
- ``True``/``False``/``None`` as unquoted keys (Python spells them ``"true"``, JavaScript keeps the
  word), unquoted words like ``yes`` or ``NULL`` (a literal, or the word as a string), and words
  that look like a misspelled literal (``ture``).

It refuses, on purpose: doubled commas and leading commas in arrays (JavaScript reads a hole),
numbers with leading zeros or in hex, non-finite numbers, unknown escapes beside known ones
(``"C:\\new\\x"``; alone they are text, ``"\\d"``), code as a value (``new X(1)``), lone
surrogates, bytes and f-string literals, keys holding line breaks, and anything cut off at the end
of the text. Nesting deeper than ``max_depth`` is refused, so recursion stays bounded; every
reading moves forward only, so one reading costs time linear in what it reads.

The rules are grouped by kind, one module each, as functions over one shared
:class:`.cursor.Cursor` (the text, the position reached, the fixes and choices of the reading):

- ``cursor``: the reading's state and the moves every rule makes (space, comments, fixes,
  choices, depth), and ``ReadError``;
- ``literals``: numbers and the words standing for values (literals, their variants and slips,
  dates, times, UUIDs, versions);
- ``quotes``: the kinds of quotes and whether a quote may close or open a string;
- ``escapes``: backslashes in strings;
- ``strings``: quoted strings, Python's string forms, and joins (``"a" + "b"``, ``'a' 'b'``);
- ``unquoted``: member values written without quotes;
- ``keys``: object keys and the colon after them;
- ``brackets``: wrong, stray and missing closing brackets;
- ``containers``: the value dispatch, objects, arrays and tuples (they call each other);
- ``reader``: ``Reader``, the cursor with the entry points the lenient parser calls.

Each module imports only those listed before it.
"""
