"""The REST API's doors: participants', staff's and studies' views, token auth, URLs."""
