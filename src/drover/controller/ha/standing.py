"""What a controller that is not the active one knows of the leadership, and how it answers
(api/standby.py serves it): its health, and a refusal that names the active controller."""

from __future__ import annotations

from dataclasses import dataclass

from drover.protocol import api


@dataclass(slots=True)
class Standing:
    """What this controller knows of the leadership while it is not active."""

    address: str  # its own
    active: str | None = None  # the active controller's, from the store; None while no one holds the lead
    taking_over: bool = False  # it holds the lead and is loading the store

    def health(self) -> api.Health:
        return api.Health(role="taking_over" if self.taking_over else "standby", address=self.address,
                          active=self.address if self.taking_over else self.active)

    def refusal(self) -> tuple[api.ErrorReply, int]:
        if self.taking_over:
            # A standby's answer still (kind "standby"), naming no one: clients and nodes with
            # several addresses try again in a moment, as while no controller is active.
            return api.ErrorReply(error=f"the controller at {self.address} is taking over as the active one and "
                                        "loading the store; try again in a moment", kind="standby"), 503
        if self.active is None:
            return api.ErrorReply(error=f"the controller at {self.address} is a standby, and no controller is "
                                        "active at the moment (one is taking over); try again in a moment",
                                  kind="standby"), 503
        return api.ErrorReply(error=f"the controller at {self.address} is a standby; the active controller is at "
                                    f"{self.active}", kind="standby", active=self.active), 503
