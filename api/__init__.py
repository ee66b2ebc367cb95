"""FedGen Lab server: storage, REST API and the pieces the worker shares."""
