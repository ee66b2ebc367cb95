"""The helpers of the Submit page (dashboard/app_pages/submit.py) that no other page uses."""
