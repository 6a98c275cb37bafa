"""Recalibration of an identified model to a payload (``identification.calibration``, issues 13 and 17).

Oracles: the torques of the model holding a known payload (``with_payload``: the payload's body
through ``inertial_to_standard``, not through the calibration's point-mass formula), and the
parallel-axis theorem written out for the point mass."""
from __future__ import annotations

import numpy as np
import pytest

from synthetic import fourier_trajectory, synthetic_dataset
from youbot_dynamics.arm.description import default_arm
from youbot_dynamics.dynamics.model import DynamicModel
from youbot_dynamics.dynamics.nominal import nominal_model
from youbot_dynamics.dynamics.payload import Payload, with_payload
from youbot_dynamics.identification.estimation.calibration import calibrate, point_mass_inertia
from youbot_dynamics.identification.io.dataset import IdentificationError

ARM = default_arm()
PAYLOAD = Payload.of(0.5, [0.0, 0.0, 0.05])  # the demo's: 0.5 kg, 5 cm out along the tool axis


@pytest.fixture(scope="module")
def model():
    return nominal_model(ARM)[0]


@pytest.fixture(scope="module")
def trajectory():
    return fourier_trajectory(ARM, duration=20.0, rate=500.0, seed=3, period=10.0)


def recording(model, trajectory, payload: Payload, noise: float = 0.0):
    return synthetic_dataset(with_payload(model, payload, ARM.tool), *trajectory, torque_noise=noise, seed=5)


def tool_com(result) -> np.ndarray:
    tool = ARM.tool
    return tool[:3, :3].T @ (result.payload_com - tool[:3, 3])


def test_point_mass_inertia_is_the_parallel_axis_theorem():
    c = np.array([0.01, -0.02, 0.05])
    m = 0.5
    expected = m * (c @ c * np.eye(3) - np.outer(c, c))  # about the frame origin
    got = point_mass_inertia(m, m * c)
    np.testing.assert_allclose(got, expected[[0, 1, 2, 0, 0, 1], [0, 1, 2, 1, 2, 2]], rtol=1e-12)
    # a mass taken away or too small to place: no inertia change (the unchanged link stays feasible)
    assert not point_mass_inertia(-0.5, -m * c).any()
    assert not point_mass_inertia(1e-4, 1e-3 * np.ones(3)).any()


@pytest.mark.parametrize("friction", [(), "auto"])
def test_a_point_mass_payload_is_found_where_it_is(model, trajectory, friction):
    """The payload of the demo on exact torques: mass within 1 %, centre of mass within 2 mm (the
    previous point-mass inertia, which moved the whole link to the new centre of mass, found
    0.531 kg at 3.2 cm here)."""
    result = calibrate(model, [recording(model, trajectory, PAYLOAD)], ARM, friction=friction)
    assert result.payload_mass == pytest.approx(PAYLOAD.mass, rel=0.01)
    np.testing.assert_allclose(tool_com(result), PAYLOAD.position, atol=0.002)
    assert result.all_data["after"].moving < 0.1 * result.all_data["before"].moving


def test_an_off_axis_payload_is_found_exactly_with_its_inertia(model, trajectory):
    """A point mass off the tool axis (x, y, z all different and non-zero) on exact torques: mass,
    centre of mass and the inertia change about the last DH frame's origin to within the solver's
    precision (measured: mass 4e-6 relative, centre of mass 3 um, inertia 1e-4 relative), and the
    calibrated model predicts the exact torques. The oracle of the inertia: the parallel-axis
    theorem of the point mass written out here, at the payload's position mapped through the tool
    frame. (Ignoring the point-mass inertia, or swapping the payload's x and y, fails here; the
    on-axis payloads above cannot tell x from y.)"""
    payload = Payload.of(0.4, [0.03, -0.015, 0.04])
    result = calibrate(model, [recording(model, trajectory, payload)], ARM, friction=())
    assert result.payload_mass == pytest.approx(payload.mass, rel=1e-4)
    np.testing.assert_allclose(tool_com(result), payload.position, atol=2e-5)
    c = ARM.tool[:3, :3] @ payload.position + ARM.tool[:3, 3]  # in the last DH frame
    tensor = payload.mass * (c @ c * np.eye(3) - np.outer(c, c))
    expected = tensor[[0, 1, 2, 0, 0, 1], [0, 1, 2, 1, 2, 2]]  # Ixx, Iyy, Izz, Ixy, Ixz, Iyz
    np.testing.assert_allclose(result.payload_inertia, expected, rtol=1e-3, atol=1e-8)
    assert result.all_data["after"].moving < 1e-4


def test_a_light_last_link_does_not_bias_the_payload(model, trajectory):
    """An identified last link with little inertia to spare (the demo identified 0.019 kg for link 5
    once: the wrist's mass split between links 4 and 5 is not identifiable): the payload is a point
    mass added to it, consistent whatever the link. Requiring the link plus the payload to be
    consistent while the pass held the payload's inertia at the previous estimate (zero at first)
    found 0.552 kg at 1.9 cm in that demo, 0.493 kg at 4.9 cm without it."""
    chi = np.array(model.standard, dtype=float)
    last = 4 * 14  # link 5: m, mx, my, mz, Ixx, Iyy, Izz, Ixy, Ixz, Iyz, then the drive's Ia, fv, fc, f0
    chi[last:last + 10] = [0.02, 0.0, 0.0, 0.0, 2e-5, 2e-5, 2e-5, 0.0, 0.0, 0.0]
    light = DynamicModel.from_standard(model.chain, chi)
    result = calibrate(light, [recording(light, trajectory, PAYLOAD)], ARM, friction=())
    assert result.payload_mass == pytest.approx(PAYLOAD.mass, rel=0.01)
    np.testing.assert_allclose(tool_com(result), PAYLOAD.position, atol=0.002)


@pytest.mark.parametrize("held_out, chosen", [
    ((0.0278, 0.0295, 0.0276), "payload"),  # the demo's near tie (the node's recalibration, issue 17)
    ((0.264, 0.267, 0.239), "payload and friction"),  # a real run (test_real_data): friction earns its place
    ((0.30, 0.28, 0.27), "payload and friction offsets"),  # offsets 6.7 % better; all friction only 3.6 % more
])
def test_a_wider_update_must_predict_clearly_better(model, trajectory, monkeypatch, held_out, chosen):
    """The update chosen by the held-out error: a wider one only if at least WIDER_GAIN (5 %) better
    than the narrower one chosen, with the held-out errors measured in the demo and on real runs."""
    from types import SimpleNamespace

    import youbot_dynamics.identification.estimation.calibration as calibration

    errors = iter(held_out)
    monkeypatch.setattr(calibration, "_errors", lambda *a: {"after": SimpleNamespace(moving=next(errors, 0.1)),
                                                            "before": SimpleNamespace(moving=0.5)})
    fits = []
    real_fit = calibration._fit
    monkeypatch.setattr(calibration, "_fit", lambda *a: fits.append(a[-1]) or real_fit(*a))
    result = calibrate(model, [recording(model, trajectory, PAYLOAD)], ARM)
    assert result.update == chosen
    assert fits[-1] == calibration.UPDATES[chosen]  # the final fit on all the data is the chosen update


def test_with_torque_noise_the_payload_is_within_the_demo_goals(model, trajectory):
    """Current noise of the real drives (0.05 N m): within the issue's 5 % and 1 cm."""
    result = calibrate(model, [recording(model, trajectory, PAYLOAD, noise=0.05)], ARM)
    assert result.payload_mass == pytest.approx(PAYLOAD.mass, rel=0.05)
    assert np.linalg.norm(tool_com(result) - PAYLOAD.position) <= 0.01


def test_no_payload_change_finds_none(model, trajectory):
    result = calibrate(model, [recording(model, trajectory, Payload.of(0.0), noise=0.05)], ARM)
    assert abs(result.payload_mass) < 0.02


def test_bad_calls_are_refused(model, trajectory):
    data = recording(model, trajectory, PAYLOAD)
    with pytest.raises(IdentificationError, match="no recording"):
        calibrate(model, [], ARM)
    with pytest.raises(IdentificationError, match="holdout"):
        calibrate(model, [data], ARM, holdout=0.95)
