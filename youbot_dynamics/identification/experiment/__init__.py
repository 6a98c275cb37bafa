"""The identification experiment on the arm: :mod:`.session` (the supervised phases),
:mod:`.streaming` (horizons with braking tails), :mod:`.recording` (joint states to a bag)."""
