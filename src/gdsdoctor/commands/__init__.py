"""The command features beside diagnosis, each in its module: the fleet analysis, the ``bench``
runner, the ``topo`` view, ``explain`` and the rule catalogue. The CLI (``gdsdoctor.cli``) and the
API call them; nothing below them imports them."""
