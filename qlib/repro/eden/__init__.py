"""Reproduction of paper 002 (EDEN): experiment drivers, paper settings and claims."""
