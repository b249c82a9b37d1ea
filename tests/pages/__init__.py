"""Pages stage: profiles, sections, curated data and the pages they make."""
