"""``python -m bot``: the same entry point as the ``tortoise-bot`` console script."""

from bot.cli import main

raise SystemExit(main())
