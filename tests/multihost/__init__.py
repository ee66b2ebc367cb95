"""Tests across several hosts on one machine: network namespaces joined by a bridge.

`tests.support.netns` is the harness (a lab host running Postgres, Redis and the API; worker
hosts w1, w2, w3, each with its own network, host name, FEDGEN_HOME and data folder);
`test_three_hosts` is the drill that kills a host mid-run.
"""
