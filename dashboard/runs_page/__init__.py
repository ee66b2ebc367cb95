"""The helpers of the Runs page (dashboard/app_pages/runs.py) that no other page uses."""
