"""The simulation harness of the rules tests: one package for the Hypothesis machines, the
seeded simulations and the benchmarks (issue 14, item 5).

- `positions`: explicit positions (`cards`, `position`) and random ones (`random_deal` from a
  `Shape`, with seeded dice or Hypothesis's: `seeded_deal`, `explicit_deals`);
- `finders`: which actions look sensible on a table (pure queries), and plans over several
  steps;
- `agents`: the random players (`Agents`, in the `HURRIED` or `COMPLETE` style);
- `simulation`, `matches`: seeded smazzate and long matches, checked on the way;
- `invariants`, `watch`: what must hold at every step; `endings`, `oracle`: the scores (M12,
  M13) and the judgement of a calata (M5.4) recomputed independently, by brute force;
- `engine`: the engine internals the harness reads (the rest is `machiavelox.rules`).
"""
