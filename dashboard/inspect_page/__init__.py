"""The helpers of the Inspect page (dashboard/app_pages/inspect.py) that no other page uses."""
