"""Dynamic model of a DH serial arm: standard parameters, regressors, base parameters, M/C/G."""
