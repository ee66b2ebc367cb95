"""The address of the browser a Streamlit session serves, for the API to count it apart.

Behind docker-compose every browser's API call leaves from the one dashboard container; the
dashboard names the browser in `X-Forwarded-For` (`api_client.open_client`), and the API believes it
only from FEDGEN_TRUSTED_PROXIES (api/client_address.py), so failed sign-ins are counted per
browser instead of one budget for everyone.
"""

from __future__ import annotations

import ipaddress


def browser_address() -> str | None:
    """The session's browser address (`st.context.ip_address`); None outside a Streamlit
    session, for a browser on this host (Streamlit reports none), or for anything not an IP."""
    try:
        import streamlit as st
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        if get_script_run_ctx(suppress_warning=True) is None:
            return None
        ip = st.context.ip_address
    except Exception:  # no Streamlit runtime (a script, a test): no browser to name
        return None
    if not ip:
        return None
    try:
        return str(ipaddress.ip_address(ip.strip()))
    except ValueError:
        return None
