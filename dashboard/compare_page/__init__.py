"""The helpers of the Compare page (dashboard/app_pages/compare.py) that no other page uses."""
