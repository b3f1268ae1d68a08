"""Trajectories in, policies out: settings, policy and networks, the trainer loop with its
algorithms (PPO), reward signals, checkpoints, ONNX export."""
