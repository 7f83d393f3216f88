"""Views: HTTP only, one module per area of the site. Each reads the request, calls a
selector (reads) or a service (writes), and renders or answers."""
