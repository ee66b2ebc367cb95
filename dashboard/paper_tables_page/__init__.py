"""The helpers of the Sweep tables page (dashboard/app_pages/paper_tables.py) that no other page uses."""
