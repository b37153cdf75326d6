"""`drover web`: a dashboard in the browser for the user who runs it.

It acts with that user's own credentials through `drover.client`, as the CLI does, so it shows
nothing the user could not see with `drover status`, `show`, `history` or `nodes`, and every
action it offers is decided by the controller. `session.py` guards it (a one-time token for a
session cookie, and a check of every state-changing request), `pages.py` renders the API's
models as HTML, `reads.py` gathers what each page shows, `output.py` reads a task's output as
the user, and `server.py` serves it all with live updates as server-sent events.
"""
