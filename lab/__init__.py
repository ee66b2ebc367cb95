"""The lab's state, shared by the API and the workers: settings (config), the database (db,
models, repository/), dispatch and fair share, queue names, leases' SQL, checkpoint storage,
the trash, token hashing (security), webhook events, targets and payloads, and the queries
behind analyses and plots. Imports fedgen/ and nothing of api/, worker/ or dashboard/."""
