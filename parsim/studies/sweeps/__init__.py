"""studies/sweeps"""
