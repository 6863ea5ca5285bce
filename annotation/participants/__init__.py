"""People taking part: accounts, consent, demographics, recruitment, erasure, their rankings."""
