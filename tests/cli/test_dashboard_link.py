"""minislurm dashboard's link, offline: the controller's address and a new token of the user's,
after '#' (a stand-in client answers POST /token as the controller does)."""

from __future__ import annotations

from minislurm.cli.dashboard import LIFESPAN, dashboard_url


class Controller:
    def __init__(self, address):
        self.address, self.asked = address, []

    def call(self, method, path, body=None):
        self.asked.append((method, path, body))
        return {"token": "eyJ.abc.def", "user": "alice"}


def test_the_link_has_the_address_and_a_token_with_its_lifespan():
    c = Controller(("10.0.0.5", 6817))
    assert dashboard_url(c, 600) == "http://10.0.0.5:6817/dashboard#token=eyJ.abc.def"
    assert c.asked == [("POST", "/token", {"lifespan": 600})]
    dashboard_url(c)
    assert c.asked[-1][2] == {"lifespan": LIFESPAN} and LIFESPAN == 8 * 3600


def test_an_ipv6_address_is_bracketed():
    assert dashboard_url(Controller(("fd00::2", 6817))).startswith("http://[fd00::2]:6817/dashboard#token=")
