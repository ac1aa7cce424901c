"""``python -m memstrata``: the ``memstrata`` command line."""

from .cli import main

if __name__ == "__main__":
    main()
