"""Django management commands of tollgate.django."""
