"""Advice: what the user reads first, each statement backed by the profile's numbers.

- `recommendations`: diagnostics about how steps were found, and recommendations, each
  given only when the numbers call for it and shown with them.
- `input_advice`: advice for an input-bound program, checked against its input pipeline.
- `verdict_basis`: what each input-bound verdict measures, and whether two views agree.

Reads hosts/, steps/ and tf_data/; the `Advice` type is `analysis/evidence.py`.
"""
