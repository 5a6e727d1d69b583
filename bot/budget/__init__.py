"""Spending limits: daily tokens and cost per person (their own limit, their roles'), and
for the whole workspace, reserved before each model call in one Redis step and settled
with the real usage after it."""
