"""FedGen Lab's admin command, `fedgen-lab`: the top floor. It starts the API, the worker
(worker/main.py) and the dashboard, alone or together (`up`), and runs the admin's one-shot
commands on the lab's database (db upgrade, users, tokens, quota, trash, requeue, checkpoints).
It imports api/, worker/, lab/, migrations/ and fedgen/; nothing imports it."""
