"""Stage 4, render: page models to rst and Markdown through sandboxed jinja templates."""
