"""`python -m talentrl_cli ...` is the same as `talentrl ...`."""

from talentrl_cli.cli import main

if __name__ == "__main__":
    main()
