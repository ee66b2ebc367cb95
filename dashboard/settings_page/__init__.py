"""The helpers of the Settings page (dashboard/app_pages/settings.py) that no other page uses."""
