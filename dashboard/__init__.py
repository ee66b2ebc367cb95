"""FedGen Lab dashboard: a Streamlit app that reads the lab server's REST API only."""
