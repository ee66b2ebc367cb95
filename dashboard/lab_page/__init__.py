"""The helpers of the Lab page (dashboard/app_pages/lab.py) that no other page uses."""
