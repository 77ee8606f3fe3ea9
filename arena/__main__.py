import sys

try:
    from arena.cli import main
except KeyboardInterrupt:  # Ctrl-C while still importing
    print("arena: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
