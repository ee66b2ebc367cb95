"""Helpers the tests share: factories and fakes, service checks and servers (Postgres, a TCP
proxy, faked DNS, network namespaces), the dashboard lab and browser stack, page helpers.

Test modules import helpers from here (or take conftest fixtures), never from each other.
"""
