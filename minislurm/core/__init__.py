"""The vocabulary every other layer speaks.  Nothing here reads files, sockets or clocks."""
