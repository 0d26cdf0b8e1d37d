"""tollgate_reset: forget a user's failures in tollgate."""
