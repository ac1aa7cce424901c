"""What runs at open to bring older layouts up to date."""
