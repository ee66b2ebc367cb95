"""The federated algorithms: one module per algorithm, one declaration each.

Each algorithm is `Algorithm[P]` over its own parameter class `P` (a
`fedgen.algorithms.params.AlgorithmParams`) and uses the shared `Federation`
(`fedgen.algorithms.shared`). Its `AlgorithmDecl` (`fedgen.algorithms.decl`, registered by
`fedgen.algorithms.registry`;
the built-ins' in `fedgen.algorithms.builtin`, plugins' through entry points) says
which class runs it; `base.build_algorithm(ctx)` makes the one a spec names.

Import the module that declares a name (this package re-exports nothing): importing the
registry, as `fedgen.spec` does, does not load torch through the algorithm modules.
"""
