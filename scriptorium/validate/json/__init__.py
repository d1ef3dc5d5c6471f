"""Reading model output as JSON: strict, lenient and partial.

- ``strict``: ``parse_strict`` (``json.loads`` with bounds) and ``parse_lenient`` (strict first,
  then recovery), both returning a ``ParseOutcome`` and never raising;
- ``outcome``: ``ParseOutcome``, what a parser made of a text;
- ``lenient``: recovery of the value a model meant (reasoning blocks, candidates, choosing);
- ``readings``: every plausible reading of one value, within a work budget;
- ``tolerant``: the tolerant reader's grammar, one module per kind of rule;
- ``partial``: ``PartialJSON``, the values readable from a streamed text so far.

The modules import the standard library's ``json`` by its absolute name, which this package's
name never shadows.
"""
