"""Joint-space motion shared by the simulator, the driver, the controllers and the identification
experiment: braking profiles (:mod:`.braking`), the arm's command checks (:mod:`.commands`),
Hermite interpolation (:mod:`.interpolation`), a trajectory's start state (:mod:`.trajectory_start`)
and the check of joint-value arrays (:mod:`.validation`)."""
