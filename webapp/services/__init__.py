"""Services write: every change to stored data goes through a function here."""
