"""Scalar tag names as ML-Agents writes them (REFERENCE.md 1.7) plus ours under ``Perf/``.

Use these constants rather than retyping the strings, so a dashboard built on ML-Agents'
tags reads ours.
"""

from __future__ import annotations

CUMULATIVE_REWARD = "Environment/Cumulative Reward"
EPISODE_LENGTH = "Environment/Episode Length"
GROUP_CUMULATIVE_REWARD = "Environment/Group Cumulative Reward"
LESSON_NUMBER_PREFIX = "Environment/Lesson Number/"
POLICY_ENTROPY = "Policy/Entropy"
POLICY_LEARNING_RATE = "Policy/Learning Rate"
POLICY_EPSILON = "Policy/Epsilon"
POLICY_BETA = "Policy/Beta"
POLICY_LOSS = "Losses/Policy Loss"
VALUE_LOSS = "Losses/Value Loss"
Q1_LOSS = "Losses/Q1 Loss"
Q2_LOSS = "Losses/Q2 Loss"
BASELINE_LOSS = "Losses/Baseline Loss"  # POCA
CONTINUOUS_ENTROPY_COEFF = "Policy/Continuous Entropy Coeff"  # SAC
DISCRETE_ENTROPY_COEFF = "Policy/Discrete Entropy Coeff"  # SAC
PRETRAINING_LOSS = "Losses/Pretraining Loss"  # behavioral cloning
CURIOSITY_FORWARD_LOSS = "Losses/Curiosity Forward Loss"
CURIOSITY_INVERSE_LOSS = "Losses/Curiosity Inverse Loss"
RND_LOSS = "Losses/RND Loss"
GAIL_LOSS = "Losses/GAIL Loss"
GAIL_KL_LOSS = "Losses/GAIL KL Loss"
GAIL_POLICY_ESTIMATE = "Policy/GAIL Policy Estimate"
GAIL_EXPERT_ESTIMATE = "Policy/GAIL Expert Estimate"
GAIL_GRAD_MAG_LOSS = "Policy/GAIL Grad Mag Loss"
GAIL_BETA = "Policy/GAIL Beta"
SELF_PLAY_ELO = "Self-play/ELO"
IS_TRAINING = "Is Training"
STEP = "Step"
HYPERPARAMETERS = "Hyperparameters"
HYPERPARAMETERS_TEXT = HYPERPARAMETERS + "/text_summary"
"""The tag of the hyperparameters text in the event file: ML-Agents calls torch's
``SummaryWriter.add_text("Hyperparameters", ...)``, which appends ``/text_summary``."""
CUMULATIVE_REWARD_HISTOGRAM = CUMULATIVE_REWARD + "_hist"
"""ML-Agents' histogram of the window's episode rewards (any HISTOGRAM key gets ``<key>_hist``)."""

HIDDEN_KEYS: tuple[str, ...] = (IS_TRAINING, STEP)
"""Collected but not drawn in TensorBoard, as in ML-Agents."""

PERF_ENV_WAIT_MS = "Perf/mean_env_wait_ms"
PERF_INFERENCE_MS = "Perf/mean_inference_ms"
PERF_PROCESSING_MS = "Perf/mean_processing_ms"
PERF_UPDATE_MS = "Perf/mean_update_ms"
PERF_ENV_STEPS_PER_SECOND = "Perf/env_steps_per_s"


def lesson_number(parameter: str) -> str:
    """``Environment/Lesson Number/<parameter>`` for a curriculum parameter."""
    return LESSON_NUMBER_PREFIX + parameter


def reward_signal(signal: str) -> str:
    """``Policy/<Signal> Reward``: ``reward_signal("Extrinsic")`` -> ``Policy/Extrinsic Reward``."""
    return f"Policy/{signal} Reward"


def value_estimate(signal: str) -> str:
    """``Policy/<Signal> Value Estimate`` (PPO, POCA)."""
    return f"Policy/{signal} Value Estimate"


def value(signal: str) -> str:
    """``Policy/<Signal> Value`` (SAC's value estimate)."""
    return f"Policy/{signal} Value"


def baseline_estimate(signal: str) -> str:
    """``Policy/<Signal> Baseline Estimate`` (POCA)."""
    return f"Policy/{signal} Baseline Estimate"
