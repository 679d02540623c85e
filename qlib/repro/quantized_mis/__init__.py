"""Reproduction of paper 001 (quantized-model MIS): drivers, paper values and claims."""
