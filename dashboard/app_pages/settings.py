"""Settings: your API tokens (create one, its secret shown once; revoke one) and, below them,
your alerts: webhooks (add one, delete, send a test) and each one's recent deliveries.

A revoked or expired token answers 401 from its next request on (a page signed in with it asks
to sign in again). A webhook gets a signed JSON POST when a run fails or succeeds, or a sweep or study finishes;
the workers send it, retrying a receiver that is down. The body's `text` field is what a
Slack incoming webhook shows. Which hosts may be targets is the admin's FEDGEN_WEBHOOK_ALLOW.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo

import streamlit as st

from dashboard import api_client, times
from dashboard.settings_page import alerts_view, tokens_view
from fedgen_lab.errors import LabError
from vocab.schemas.tokens import TokenPublic
from vocab.schemas.webhooks import WebhookPublic
from vocab.webhook_events import EVENT_LABELS

REFRESH_S = 5
DELIVERIES_SHOWN = 20
HOW_TO_VERIFY = (
    "Each POST carries `X-FedGen-Event`, `X-FedGen-Delivery` (its id, the same on every retry) "
    "and `X-FedGen-Signature: sha256=<hex HMAC-SHA256 of the raw body with the secret>`."
)


def _tz() -> tzinfo:
    return times.zone(st.context.timezone)


def show_field_errors(exc: LabError) -> None:
    """A 422's messages, one per field; any other failure as api_client.show_error says it."""
    fields = exc.fields if exc.status == 422 else {}
    if not fields:
        api_client.show_error(exc)
    for name, msg in fields.items():
        st.error(f"{name}: {msg}", icon=":material/error:")


def token_form() -> None:
    """Name and lifetime of a new token; its secret is shown right here, this once."""
    with st.form("tokens_add", border=True):
        st.markdown("**Create a token**")
        name_col, days_col = st.columns([3, 2])
        name = name_col.text_input(
            "Name", key="tokens_name", max_chars=100, placeholder="laptop, CI, notebook…"
        )
        days = days_col.number_input(
            "Expires after (days)",
            key="tokens_days",
            min_value=0,
            max_value=36500,
            value=0,
            step=1,
            help="0: never, or the longest the lab allows (FEDGEN_TOKEN_MAX_DAYS) when it sets one",
        )
        if not st.form_submit_button("Create token", icon=":material/key:"):
            return
    try:
        made = api_client.client().create_token(name.strip(), int(days) or None)
    except LabError as exc:
        show_field_errors(exc)
        return
    st.success(f"Token {tokens_view.label(made)} created. Copy it now:", icon=":material/check:")
    st.code(made.token, language=None)
    st.warning("It is not shown again: only its hash is stored.", icon=":material/visibility_off:")


def revoke_control(tokens: list[TokenPublic]) -> bool:
    """Pick an active token and revoke it after a confirmation; True when one was revoked.

    Nothing is picked at first (a revoke is never one click away from the page's own token),
    the token this browser is signed in with is marked in the picker, and its confirmation
    says that revoking it signs this browser out."""
    live = tokens_view.active(tokens)
    if not live:
        return False
    pick_col, button_col = st.columns([4, 1], vertical_alignment="bottom")
    picked: TokenPublic | None = pick_col.selectbox(
        "Token to revoke",
        live,
        index=None,
        placeholder="Pick a token to revoke",
        format_func=tokens_view.label,
        key="tokens_pick",
    )
    with button_col.popover(
        "Revoke…",
        icon=":material/block:",
        disabled=picked is None,
        help="Pick a token first" if picked is None else None,
    ):
        if picked is None:
            return False
        if picked.current:
            st.warning(
                f"{picked.name or 'unnamed'} ({picked.id[:8]}) is the token **this browser** "
                "is signed in with: "
                "revoking it signs this browser out (you sign in again with another token).",
                icon=":material/logout:",
            )
        else:
            st.markdown(
                f"Revoke {tokens_view.label(picked)}? Programs using it get 401 from their "
                "next request on; this cannot be undone."
            )
        if not st.button("Yes, revoke", key="tokens_revoke", type="primary"):
            return False
    if api_client.try_call(api_client.client().revoke_token, picked.id) is None:
        return False
    st.session_state.pop("tokens_pick", None)
    st.success(f"Token {tokens_view.label(picked)} revoked.", icon=":material/check:")
    return True


def tokens_section() -> None:
    """The member's tokens (an admin's list has everyone's): create, revoke, the table."""
    st.subheader("API tokens")
    st.caption(
        "Each program or machine can have its own token: revoke one without touching the "
        "others. The token this page is signed in with is one of them; revoking it signs you out."
    )
    token_form()
    page = api_client.try_call(api_client.client().list_tokens)
    if page is None:
        return
    if revoke_control(page.data):
        page = api_client.try_call(api_client.client().list_tokens) or page
    tokens = page.data
    if not tokens:
        st.info("No token.", icon=":material/key_off:")
        return
    table = tokens_view.tokens_table(tokens, datetime.now(UTC), _tz())
    st.dataframe(table, hide_index=True, key="tokens_table")


def add_form() -> None:
    """URL, events, optional secret; the 422's field messages are shown under the form."""
    with st.form("alerts_add", clear_on_submit=False, border=True):
        st.markdown("**Add a webhook**")
        url = st.text_input(
            "URL",
            key="alerts_url",
            placeholder="https://hooks.slack.com/services/…",
            help="http(s); its host must be allowed by the lab's FEDGEN_WEBHOOK_ALLOW",
        )
        cols = st.columns(len(EVENT_LABELS))
        chosen: list[str] = [
            event
            for col, (event, label) in zip(cols, EVENT_LABELS.items(), strict=True)
            if col.checkbox(label, value=event == "run.failed", key=f"alerts_ev_{event}")
        ]
        secret = st.text_input(
            "Secret (optional)",
            key="alerts_secret",
            type="password",
            help="16 to 128 printable characters; a random one is made when left empty",
        )
        if not st.form_submit_button("Add webhook", icon=":material/add_alert:"):
            return
    try:
        hook = api_client.client().create_webhook(url.strip(), chosen, secret.strip() or None)
    except LabError as exc:
        show_field_errors(exc)
        return
    st.success(f"Webhook to {hook.url} added.", icon=":material/check:")


def deliveries(hook_id: str, now: datetime) -> None:
    """The hook's newest deliveries."""
    page = api_client.try_call(api_client.client().webhook_deliveries, hook_id, DELIVERIES_SHOWN)
    if page is None:
        return
    rows = page.data
    if not rows:
        st.caption("No delivery yet.")
        return
    st.dataframe(
        alerts_view.deliveries_table(rows, now, _tz()),
        hide_index=True,
        key=f"alerts_log_{hook_id}",
        column_config={
            "subject": st.column_config.TextColumn(
                "subject", help="The run's or sweep's id (first 8 characters)"
            ),
            "status": st.column_config.TextColumn(
                "status", help="queued: not tried yet; retrying: tried, tries again later"
            ),
            "HTTP": st.column_config.TextColumn("HTTP", help="The last attempt's status code"),
        },
    )
    count = page.count
    st.caption(f"{count} {'delivery' if count == 1 else 'deliveries'} in all; the newest shown.")


def hook_card(hook: WebhookPublic, now: datetime) -> None:
    """One webhook: where, which events, its buttons and its deliveries."""
    hid = hook.id
    with st.container(border=True):
        head, test_col, delete_col = st.columns([6, 1.2, 1])
        head.markdown(f"**`{hook.url}`**")  # as text: a webhook URL is not a page to open
        head.caption(
            f"{alerts_view.events_text(hook.events)} · owner {hook.owner} · "
            f"added {times.when(hook.created_at, now, _tz())}"
        )
        if test_col.button("Send test", key=f"alerts_test_{hid}", icon=":material/send:"):
            if api_client.try_call(api_client.client().test_webhook, hid) is not None:
                st.toast("Test delivery queued; a worker sends it within seconds.")
        with delete_col.popover("Delete…", icon=":material/delete:"):
            st.markdown(f"Delete the webhook to `{hook.url}` and its deliveries? No undo.")
            if st.button("Yes, delete", key=f"alerts_del_{hid}", type="primary"):
                try:
                    api_client.client().delete_webhook(hid)
                except LabError as exc:
                    api_client.show_error(exc)
                else:
                    st.rerun()
        with st.expander("Signing secret"):
            st.code(hook.secret, language=None)
            st.caption(HOW_TO_VERIFY)
        deliveries(hid, now)


def hooks_panel() -> None:
    """Every webhook of yours (an admin sees all), refreshed every few seconds."""
    page = api_client.call(api_client.client().list_webhooks)
    hooks = page.data
    now = datetime.now(UTC)
    if not hooks:
        st.info("No webhook yet: add one above.", icon=":material/notifications_off:")
        return
    st.caption(f"{len(hooks)} webhook(s) · refreshed every {REFRESH_S} s")
    for hook in hooks:
        hook_card(hook, now)


def render() -> None:
    """The page: tokens, then alerts (the form and the panel that refreshes itself)."""
    st.title("Settings")
    tokens_section()
    st.subheader("Alerts")
    st.caption(
        "Webhooks: a signed JSON POST to your URL when a run fails or succeeds, or a sweep or a "
        "study finishes, with a Slack-compatible `text`. The lab's workers send them and retry "
        "a receiver that is down (2, 4, 8 … s); a delivery never holds a run back."
    )
    add_form()
    st.fragment(run_every=f"{REFRESH_S}s")(hooks_panel)()


# Streamlit runs a page script as __main__; an import (a test, a type check) only defines.
if __name__ == "__main__":
    render()
