"""What an annotator ranks next: the choice, quotas, the cards shown, adaptive overlap."""
