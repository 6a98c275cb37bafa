"""From recorded data to a model: :mod:`.cleaning`, :mod:`.processing`, :mod:`.least_squares`,
:mod:`.friction_fit`, :mod:`.validation`, :mod:`.pipeline`, :mod:`.calibration`."""
