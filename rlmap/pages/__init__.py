"""Stage 3, pages: what each page says, from model queries and the profile's curated data."""
