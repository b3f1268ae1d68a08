"""Run configuration: ML-Agents' own configs load, defaults match ML-Agents, errors name
their path, cross-field rules report numbers, default_settings merge, round trips."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import attrs
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.paths import MLAGENTS_CONFIGS
from trainers.exceptions import ConfigError, UnknownTrainerTypeError
from trainers.settings import (
    BehavioralCloningSettings,
    CompletionCriteria,
    ConstantSampler,
    CuriositySettings,
    EncoderType,
    ExtrinsicSettings,
    GAILSettings,
    GaussianSampler,
    MeasureType,
    MemorySettings,
    MultiRangeUniformSampler,
    NetworkSettings,
    POCASettings,
    PPOSettings,
    RewardSignalType,
    RNDSettings,
    SACSettings,
    ScheduleType,
    SelfPlaySettings,
    TrainerSettings,
    UniformSampler,
    builtin_hyperparameter_types,
    load_run_options,
    structure_run_options,
    uniform_warmup_steps,
    unstructure_run_options,
    write_configuration,
)

CONFIGS = MLAGENTS_CONFIGS
ALL_CONFIGS = sorted(CONFIGS.glob("*/*.yaml"))


def config_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def error_of(data: dict) -> str:
    with pytest.raises(ConfigError) as info:
        structure_run_options(data)
    return str(info.value)


def test_the_fixture_folder_is_there() -> None:
    assert len(ALL_CONFIGS) == 39


# ---------------------------------------------------------------- ML-Agents' own configs


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=config_id)
def test_every_mlagents_config_loads_and_round_trips(path: Path, tmp_path: Path) -> None:
    options = load_run_options(path)
    raw = yaml.safe_load(path.read_text())
    assert set(options.behaviors) == set(raw["behaviors"])
    for name, behavior in options.behaviors.items():
        assert behavior.trainer_type == (raw["behaviors"][name].get("trainer_type") or "ppo")
        expected_hp = builtin_hyperparameter_types()[behavior.trainer_type]
        assert type(behavior.hyperparameters) is expected_hp
    assert set(options.environment_parameters) == set(raw.get("environment_parameters") or {})

    out = tmp_path / "run" / "configuration.yaml"
    write_configuration(options, out)
    assert load_run_options(out) == options


def test_3dball_values_and_derived_schedules() -> None:
    options = load_run_options(CONFIGS / "ppo/3DBall.yaml")
    ball = options.behaviors["3DBall"]
    hp = ball.hyperparameters
    assert isinstance(hp, PPOSettings)
    assert (hp.batch_size, hp.buffer_size, hp.beta, hp.epsilon, hp.lambd, hp.num_epoch) == (
        64,
        12000,
        0.001,
        0.2,
        0.99,
        3,
    )
    assert hp.learning_rate == pytest.approx(3e-4)
    assert hp.learning_rate_schedule is ScheduleType.LINEAR
    assert hp.beta_schedule is ScheduleType.LINEAR and hp.epsilon_schedule is ScheduleType.LINEAR
    assert ball.network_settings == NetworkSettings(normalize=True, hidden_units=128, num_layers=2)
    assert ball.reward_signals == {RewardSignalType.EXTRINSIC: ExtrinsicSettings(gamma=0.99, strength=1.0)}
    assert ball.reward_signals["extrinsic"].gamma == 0.99  # plain string keys work too
    assert (ball.max_steps, ball.time_horizon, ball.summary_freq, ball.keep_checkpoints) == (
        500000,
        1000,
        12000,
        5,
    )
    # Keys the file leaves out take ML-Agents' defaults.
    assert ball.checkpoint_interval == 500000 and ball.threaded is False and ball.init_path is None


def test_schedules_follow_learning_rate_schedule_unless_set() -> None:
    sorter = load_run_options(CONFIGS / "ppo/Sorter_curriculum.yaml").behaviors["Sorter"]
    assert sorter.hyperparameters.beta_schedule is ScheduleType.CONSTANT
    hp = PPOSettings(learning_rate_schedule=ScheduleType.CONSTANT, epsilon_schedule=ScheduleType.LINEAR)
    assert hp.beta_schedule is ScheduleType.CONSTANT
    assert hp.epsilon_schedule is ScheduleType.LINEAR
    assert attrs.evolve(hp, beta_schedule="linear").beta_schedule == ScheduleType.LINEAR


def test_sac_and_poca_configs_structure_their_own_hyperparameters() -> None:
    sac = load_run_options(CONFIGS / "sac/3DBall.yaml").behaviors["3DBall"].hyperparameters
    assert sac == SACSettings(
        learning_rate=3e-4,
        learning_rate_schedule=ScheduleType.CONSTANT,
        batch_size=64,
        buffer_size=200000,
        buffer_init_steps=0,
        tau=0.005,
        steps_per_update=10.0,
        save_replay_buffer=False,
        init_entcoef=0.5,
        reward_signal_steps_per_update=10.0,
    )
    poca = load_run_options(CONFIGS / "poca/SoccerTwos.yaml").behaviors["SoccerTwos"]
    assert isinstance(poca.hyperparameters, POCASettings)
    assert poca.hyperparameters.batch_size == 2048
    assert poca.hyperparameters.beta_schedule is ScheduleType.CONSTANT
    assert poca.self_play == SelfPlaySettings(save_steps=50000, team_change=200000, swap_steps=2000)
    goalie = load_run_options(CONFIGS / "poca/StrikersVsGoalie.yaml").behaviors["Goalie"]
    assert goalie.self_play.swap_steps == 1000


def test_float_strings_and_floats_where_integers_are_meant() -> None:
    # PyYAML reads 1.0e7 as the string "1.0e7" (YAML 1.1 wants a signed exponent).
    pyramids = load_run_options(CONFIGS / "imitation/Pyramids.yaml").behaviors["Pyramids"]
    assert pyramids.max_steps == 10_000_000 and isinstance(pyramids.max_steps, int)
    options = structure_run_options(
        {
            "behaviors": {
                "A": {
                    "max_steps": "5.0e5",
                    "time_horizon": 128.0,
                    "hyperparameters": {"learning_rate": "3e-4", "batch_size": "32"},
                }
            }
        }
    )
    a = options.behaviors["A"]
    assert (a.max_steps, a.time_horizon, a.hyperparameters.batch_size) == (500000, 128, 32)
    assert a.hyperparameters.learning_rate == pytest.approx(3e-4)


def test_imitation_and_intrinsic_reward_signals() -> None:
    crawler = load_run_options(CONFIGS / "imitation/Crawler.yaml").behaviors["Crawler"]
    gail = crawler.reward_signals[RewardSignalType.GAIL]
    assert isinstance(gail, GAILSettings)
    assert gail.demo_path.endswith("ExpertCrawler.demo")
    assert gail.network_settings.normalize is True and gail.use_actions is False
    assert crawler.behavioral_cloning == BehavioralCloningSettings(
        demo_path="Project/Assets/ML-Agents/Examples/Crawler/Demos/ExpertCrawler.demo",
        steps=50000,
        strength=0.5,
        samples_per_update=0,
    )
    pyramids = load_run_options(CONFIGS / "imitation/Pyramids.yaml").behaviors["Pyramids"]
    curiosity = pyramids.reward_signals["curiosity"]
    assert isinstance(curiosity, CuriositySettings)
    assert curiosity.strength == 0.02 and curiosity.network_settings.hidden_units == 256
    assert curiosity.learning_rate == pytest.approx(3e-4)
    rnd = load_run_options(CONFIGS / "ppo/PyramidsRND.yaml").behaviors["Pyramids"].reward_signals["rnd"]
    assert isinstance(rnd, RNDSettings)
    assert (rnd.network_settings.hidden_units, rnd.network_settings.num_layers) == (64, 3)
    assert rnd.learning_rate == pytest.approx(1e-4)


def test_memory_and_encoders() -> None:
    hallway = load_run_options(CONFIGS / "ppo/Hallway.yaml").behaviors["Hallway"]
    assert hallway.network_settings.memory == MemorySettings(sequence_length=64, memory_size=128)
    match3 = load_run_options(CONFIGS / "ppo/Match3.yaml").behaviors["Match3SmartHeuristic"]
    assert match3.network_settings.vis_encode_type is EncoderType.MATCH3
    assert EncoderType.NATURE_CNN.min_resolution == 36


def test_environment_parameters_samplers_and_curriculum() -> None:
    params = load_run_options(CONFIGS / "ppo/3DBall_randomize.yaml").environment_parameters
    (mass,) = params["mass"].curriculum
    assert mass.name == "mass" and mass.completion_criteria is None
    assert mass.value == UniformSampler(min_value=0.5, max_value=10.0)

    wall = load_run_options(CONFIGS / "ppo/WallJump_curriculum.yaml").environment_parameters
    big = wall["big_wall_height"].curriculum
    assert [lesson.name for lesson in big] == ["Lesson0", "Lesson1", "Lesson2", "Lesson3"]
    assert big[0].value == UniformSampler(min_value=0.0, max_value=4.0)
    assert big[0].completion_criteria == CompletionCriteria(
        behavior="BigWallJump",
        measure=MeasureType.PROGRESS,
        signal_smoothing=True,
        min_lesson_length=100,
        threshold=0.1,
    )
    assert big[3].value == ConstantSampler(value=8.0) and big[3].completion_criteria is None
    assert wall["small_wall_height"].curriculum[1].value == ConstantSampler(value=2.0)

    options = structure_run_options(
        {
            "environment_parameters": {
                "g": {"sampler_type": "gaussian", "sampler_parameters": {"mean": 2, "st_dev": 0.5, "seed": 7}},
                "m": {"sampler_type": "multirangeuniform", "sampler_parameters": {"intervals": [[1, 2], [4, 5]]}},
                "c": 3,
                "d": {"sampler_type": "uniform"},
            }
        }
    )
    p = options.environment_parameters
    assert p["g"].curriculum[0].value == GaussianSampler(mean=2.0, st_dev=0.5, seed=7)
    assert p["m"].curriculum[0].value == MultiRangeUniformSampler(intervals=((1.0, 2.0), (4.0, 5.0)))
    assert p["c"].curriculum[0].value == ConstantSampler(value=3.0)
    assert p["d"].curriculum[0].value == UniformSampler(min_value=0.0, max_value=1.0)
    assert structure_run_options(unstructure_run_options(options)) == options


# ---------------------------------------------------------------- defaults


def test_defaults_match_mlagents() -> None:
    t = TrainerSettings()
    assert (t.trainer_type, t.max_steps, t.time_horizon, t.summary_freq) == ("ppo", 500000, 64, 50000)
    assert (t.checkpoint_interval, t.keep_checkpoints, t.even_checkpoints, t.threaded) == (
        500000,
        5,
        False,
        False,
    )
    assert t.init_path is None and t.self_play is None and t.behavioral_cloning is None
    assert t.reward_signals == {RewardSignalType.EXTRINSIC: ExtrinsicSettings()}
    ppo = t.hyperparameters
    assert isinstance(ppo, PPOSettings)
    assert (ppo.batch_size, ppo.buffer_size, ppo.beta, ppo.epsilon, ppo.lambd, ppo.num_epoch) == (
        1024,
        10240,
        5e-3,
        0.2,
        0.95,
        3,
    )
    assert ppo.learning_rate == 3e-4 and ppo.shared_critic is False
    assert ppo.learning_rate_schedule is ScheduleType.LINEAR
    sac = SACSettings()
    assert (sac.batch_size, sac.buffer_size, sac.buffer_init_steps, sac.tau) == (128, 50000, 0, 0.005)
    assert (sac.steps_per_update, sac.save_replay_buffer, sac.init_entcoef) == (1.0, False, 1.0)
    assert sac.reward_signal_steps_per_update == 1.0
    assert sac.learning_rate_schedule is ScheduleType.CONSTANT
    assert SACSettings(steps_per_update=4).reward_signal_steps_per_update == 4
    assert POCASettings().learning_rate_schedule is ScheduleType.LINEAR
    net = NetworkSettings()
    assert (net.normalize, net.hidden_units, net.num_layers, net.memory, net.deterministic) == (
        False,
        128,
        2,
        None,
        False,
    )
    assert net.vis_encode_type is EncoderType.SIMPLE and net.goal_conditioning_type == "hyper"
    assert MemorySettings() == MemorySettings(sequence_length=64, memory_size=128)
    assert (ExtrinsicSettings().gamma, ExtrinsicSettings().strength) == (0.99, 1.0)
    assert CuriositySettings().learning_rate == 3e-4 and RNDSettings().learning_rate == 1e-4
    gail = GAILSettings(demo_path="d")
    assert (gail.learning_rate, gail.use_actions, gail.use_vail) == (3e-4, False, False)
    bc = BehavioralCloningSettings(demo_path="d")
    assert (bc.steps, bc.strength, bc.samples_per_update, bc.num_epoch, bc.batch_size) == (
        0,
        1.0,
        0,
        None,
        None,
    )
    sp = SelfPlaySettings()
    assert (sp.save_steps, sp.team_change, sp.swap_steps, sp.window) == (20000, 100000, 2000, 10)
    assert (sp.play_against_latest_model_ratio, sp.initial_elo) == (0.5, 1200.0)
    assert CompletionCriteria(behavior="b") == CompletionCriteria(
        behavior="b",
        measure=MeasureType.REWARD,
        min_lesson_length=0,
        signal_smoothing=True,
        threshold=0.0,
        require_reset=False,
    )
    assert UniformSampler() == UniformSampler(min_value=0.0, max_value=1.0, seed=-1)
    assert GaussianSampler() == GaussianSampler(mean=1.0, st_dev=1.0)
    assert MultiRangeUniformSampler().intervals == ((0.0, 1.0),)


def test_run_wide_defaults_match_mlagents() -> None:
    o = structure_run_options({})
    env, eng, cp = o.env_settings, o.engine_settings, o.checkpoint_settings
    assert (env.env_path, env.env_args, env.base_port, env.num_envs, env.num_areas) == (None, None, 5005, 1, 1)
    assert (env.timeout_wait, env.seed, env.max_lifetime_restarts) == (60, -1, 10)
    assert (env.restarts_rate_limit_n, env.restarts_rate_limit_period_s) == (1, 60)
    assert (eng.width, eng.height, eng.quality_level, eng.time_scale) == (84, 84, 5, 20.0)
    assert (eng.target_frame_rate, eng.capture_frame_rate, eng.no_graphics) == (-1, 60, False)
    assert eng.no_graphics_monitor is False
    assert (cp.run_id, cp.initialize_from, cp.resume, cp.force, cp.inference, cp.results_dir) == (
        "ppo",
        None,
        False,
        False,
        False,
        "results",
    )
    assert cp.write_path == "results/ppo" and cp.run_logs_dir == "results/ppo/run_logs"
    assert o.torch_settings.device is None and o.debug is False
    assert o.behaviors == {} and o.default_settings is None and o.environment_parameters == {}


def test_even_checkpoints_spread_over_max_steps() -> None:
    t = TrainerSettings(max_steps=1_000_000, keep_checkpoints=4, even_checkpoints=True)
    assert t.effective_checkpoint_interval == 250_000
    assert TrainerSettings(checkpoint_interval=7).effective_checkpoint_interval == 7


# ---------------------------------------------------------------- structural errors


def test_typo_names_full_path_and_nearest_key() -> None:
    message = error_of({"behaviors": {"3DBall": {"hyperparameters": {"batchsize": 64}}}})
    assert message == "behaviors.3DBall.hyperparameters.batchsize: unknown key (did you mean batch_size?)"


def test_unknown_keys_everywhere_are_forbidden() -> None:
    assert error_of({"env_setings": {}}) == "env_setings: unknown key (did you mean env_settings?)"
    assert error_of({"engine_settings": {"time_scal": 5}}) == (
        "engine_settings.time_scal: unknown key (did you mean time_scale?)"
    )
    assert error_of({"behaviors": {"A": {"network_settings": {"memory": {"memory_sise": 4}}}}}) == (
        "behaviors.A.network_settings.memory.memory_sise: unknown key (did you mean memory_size?)"
    )
    assert error_of({"behaviors": {"A": {"reward_signals": {"curiousity": {}}}}}) == (
        "behaviors.A.reward_signals.curiousity: unknown reward signal (did you mean curiosity?)"
    )
    message = error_of({"behaviors": {"A": {"zzz": 1}}})
    assert message.startswith("behaviors.A.zzz: unknown key (valid: trainer_type, hyperparameters,")
    # A PPO key under a SAC behavior says whose key it is.
    assert error_of({"behaviors": {"A": {"trainer_type": "sac", "hyperparameters": {"beta": 0.1}}}}) == (
        "behaviors.A.hyperparameters.beta: unknown key for trainer_type sac (it is a ppo/poca hyperparameter)"
    )


def test_wrong_types_name_path_expected_type_and_value() -> None:
    assert error_of({"behaviors": {"A": {"hyperparameters": {"batch_size": "abc"}}}}) == (
        "behaviors.A.hyperparameters.batch_size: expected an integer, got 'abc' (str)"
    )
    assert error_of({"behaviors": {"A": {"hyperparameters": {"batch_size": 64.5}}}}) == (
        "behaviors.A.hyperparameters.batch_size: expected an integer, got 64.5 (float)"
    )
    assert error_of({"behaviors": {"A": {"threaded": "yes"}}}) == (
        "behaviors.A.threaded: expected true or false, got 'yes' (str)"
    )
    assert error_of({"behaviors": {"A": {"hyperparameters": {"learning_rate_schedule": "lineer"}}}}) == (
        "behaviors.A.hyperparameters.learning_rate_schedule: expected one of constant, linear, "
        "got 'lineer' (str) (did you mean linear?)"
    )
    assert error_of({"behaviors": {"A": {"hyperparameters": 5}}}) == (
        "behaviors.A.hyperparameters: expected a mapping, got 5 (int)"
    )
    assert error_of({"env_settings": {"env_args": "--foo"}}) == (
        "env_settings.env_args: expected a list, got '--foo' (str)"
    )
    assert error_of({"behaviors": {"A": {"reward_signals": {"gail": {"strength": 0.1}}}}}) == (
        "behaviors.A.reward_signals.gail.demo_path: required key missing"
    )


def test_several_errors_are_reported_together() -> None:
    message = error_of(
        {
            "behaviors": {
                "A": {"hyperparameters": {"batchsize": 64, "learning_rate": "fast"}, "max_steps": "lots"},
                "B": {"network_settings": {"vis_encode_type": "natur_cnn"}},
            },
            "torch_setings": {},
            "debug": "please",
        }
    )
    lines = message.splitlines()
    assert lines[0] == "6 problems in the run configuration:"
    assert sorted(line.strip() for line in lines[1:]) == sorted(
        [
            "torch_setings: unknown key (did you mean torch_settings?)",
            "behaviors.A.hyperparameters.batchsize: unknown key (did you mean batch_size?)",
            "behaviors.A.hyperparameters.learning_rate: expected a number, got 'fast' (str)",
            "behaviors.A.max_steps: expected an integer, got 'lots' (str)",
            "behaviors.B.network_settings.vis_encode_type: expected one of simple, nature_cnn, resnet, "
            "match3, fully_connected, got 'natur_cnn' (str) (did you mean nature_cnn?)",
            "debug: expected true or false, got 'please' (str)",
        ]
    )


def test_structural_and_cross_field_errors_come_together() -> None:
    message = error_of(
        {
            "behaviors": {
                "A": {"hyperparameters": {"batchsize": 1}},
                "B": {"hyperparameters": {"batch_size": 2048, "buffer_size": 1024}},
            }
        }
    )
    assert "behaviors.A.hyperparameters.batchsize: unknown key (did you mean batch_size?)" in message
    assert "behaviors.B: batch_size (2048) must not exceed buffer_size (1024)" in message


def test_unknown_trainer_type_is_its_own_error() -> None:
    with pytest.raises(UnknownTrainerTypeError) as info:
        structure_run_options({"behaviors": {"A": {"trainer_type": "ppp"}}})
    assert str(info.value) == (
        "behaviors.A.trainer_type: unknown trainer type 'ppp' (did you mean ppo? known: poca, ppo, sac)"
    )
    assert isinstance(info.value, ConfigError)


def test_top_level_must_be_a_mapping_and_old_format_gets_a_hint() -> None:
    with pytest.raises(ConfigError, match="must be a mapping of sections"):
        structure_run_options([1, 2])  # type: ignore[arg-type]
    message = error_of({"3DBall": {"trainer_type": "ppo"}})
    assert "3DBall: unknown key (valid: behaviors, default_settings," in message
    assert "old-format configuration" in message


def test_legacy_framework_key_is_dropped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        options = structure_run_options({"behaviors": {"A": {"framework": "tensorflow"}}})
    assert options.behaviors["A"] == TrainerSettings()
    assert "framework" in caplog.text


# ---------------------------------------------------------------- cross-field validation


def test_cross_field_errors_carry_the_numbers() -> None:
    message = error_of(
        {
            "behaviors": {
                "3DBall": {
                    "hyperparameters": {"batch_size": 2048, "buffer_size": 1024, "learning_rate": -0.1, "lambd": 1.5},
                    "network_settings": {"memory": {"sequence_length": 4096, "memory_size": 127}, "hidden_units": 0},
                    "reward_signals": {"extrinsic": {"gamma": 1.0}},
                    "time_horizon": 0,
                }
            },
            "env_settings": {"num_envs": 4},
        }
    )
    lines = {line.strip() for line in message.splitlines()[1:]}
    assert lines == {
        "behaviors.3DBall: batch_size (2048) must not exceed buffer_size (1024)",
        "behaviors.3DBall.hyperparameters.learning_rate: must be > 0 (got -0.1)",
        "behaviors.3DBall.hyperparameters.lambd: must be between 0 and 1 (got 1.5)",
        "behaviors.3DBall.network_settings.hidden_units: must be > 0 (got 0)",
        "behaviors.3DBall.network_settings.memory.memory_size: must be even and > 0 (got 127)",
        "behaviors.3DBall: network_settings.memory.sequence_length (4096) must not exceed batch_size (2048)",
        "behaviors.3DBall.reward_signals.extrinsic.gamma: must be between 0 and 1, exclusive (got 1.0)",
        "behaviors.3DBall.time_horizon: must be > 0 (got 0)",
        "env_settings: num_envs (4) must be 1 without env_path (the Unity Editor is a single "
        "environment; set env_path or --env)",
    }


def test_stable_baselines3s_ppo_keys_are_checked_with_their_numbers() -> None:
    """The agents-learn keys for SB3's PPO and SAC (docs/gymnasium.md): out of range, an epsilon
    floor under a constant schedule, a key another trainer type lacks, an unknown activation,
    initialisation or warm-up."""
    ppo = {"max_grad_norm": 0, "adam_epsilon": -1e-5, "epsilon": 0.2, "epsilon_floor": 0.3}
    lines = {line.strip() for line in error_of({"behaviors": {"P": {"hyperparameters": ppo}}}).splitlines()[1:]}
    assert lines == {
        "behaviors.P.hyperparameters.max_grad_norm: must be > 0 (got 0.0)",
        "behaviors.P.hyperparameters.adam_epsilon: must be > 0 (got -1e-05)",
        "behaviors.P.hyperparameters.epsilon_floor: must be between 0 and epsilon (0.2) (got 0.3)",
    }
    constant = {"epsilon_schedule": "constant", "epsilon_floor": 0.0}
    assert error_of({"behaviors": {"P": {"hyperparameters": constant}}}) == (
        "behaviors.P.hyperparameters.epsilon_floor: the end of a linear epsilon_schedule, but "
        "epsilon_schedule is constant; remove it or set epsilon_schedule: linear"
    )
    sac = {"trainer_type": "sac", "hyperparameters": {"max_grad_norm": 0.5}}
    assert "max_grad_norm: unknown key for trainer_type sac (it is a ppo/poca hyperparameter)" in error_of(
        {"behaviors": {"S": sac}}
    )
    assert "network_settings.activation: expected one of swish, tanh, relu, got 'gelu'" in error_of(
        {"behaviors": {"P": {"network_settings": {"activation": "gelu"}}}}
    )
    assert "network_settings.initialization: expected one of mlagents, pytorch, got 'orthogonal'" in error_of(
        {"behaviors": {"P": {"network_settings": {"initialization": "orthogonal"}}}}
    )
    warmup = {"trainer_type": "sac", "hyperparameters": {"buffer_init_actions": "random"}}
    assert "hyperparameters.buffer_init_actions: expected one of policy, uniform, got 'random'" in error_of(
        {"behaviors": {"S": warmup}}
    )
    assert "buffer_init_actions: unknown key for trainer_type ppo (it is a sac hyperparameter)" in error_of(
        {"behaviors": {"P": {"hyperparameters": {"buffer_init_actions": "uniform"}}}}
    )
    warming = SACSettings(buffer_init_steps=500, buffer_init_actions="uniform")
    assert [uniform_warmup_steps(hp) for hp in (warming, SACSettings(buffer_init_steps=500), object())] == [500, 0, 0]
    good = structure_run_options(
        {
            "behaviors": {
                "P": {
                    "trainer_type": "poca",
                    "hyperparameters": {"epsilon_floor": 0.0, "max_grad_norm": 0.5, "adam_epsilon": 1e-5},
                    "network_settings": {"activation": "tanh"},
                }
            }
        }
    ).behaviors["P"]
    hp = good.hyperparameters
    assert (hp.epsilon_floor, hp.max_grad_norm, hp.adam_epsilon, good.network_settings.activation) == (
        0.0,
        0.5,
        1e-5,
        "tanh",
    )
    defaults = TrainerSettings()
    assert (defaults.hyperparameters.epsilon_floor, defaults.hyperparameters.max_grad_norm) == (0.1, None)
    assert (defaults.hyperparameters.adam_epsilon, defaults.network_settings.activation) == (1e-8, "swish")


def test_memory_sequence_length_bounded_by_batch_size() -> None:
    assert (
        error_of(
            {
                "behaviors": {
                    "H": {
                        "hyperparameters": {"batch_size": 32, "buffer_size": 64},
                        "network_settings": {"memory": {"sequence_length": 64}},
                    }
                }
            }
        )
        == "behaviors.H: network_settings.memory.sequence_length (64) must not exceed batch_size (32)"
    )


def test_recurrent_ppo_batch_size_is_whole_sequences() -> None:
    ppo = {
        "hyperparameters": {"batch_size": 100, "buffer_size": 200},
        "network_settings": {"memory": {"sequence_length": 64}},
    }
    assert error_of({"behaviors": {"H": ppo}}) == (
        "behaviors.H: hyperparameters.batch_size (100) must be a multiple of network_settings.memory.sequence_length "
        "(64): minibatches are whole sequences"
    )


def test_recurrent_sac_batch_of_partial_sequences_is_said(caplog: pytest.LogCaptureFixture) -> None:
    # SAC samples batch_size // sequence_length sequences, as mlagents-learn does, and says so
    sac = {
        "trainer_type": "sac",
        "hyperparameters": {"batch_size": 100},
        "network_settings": {"memory": {"sequence_length": 64}},
    }
    with caplog.at_level("WARNING"):
        structure_run_options({"behaviors": {"H": sac}})
    assert (
        "behaviors.H: hyperparameters.batch_size (100) is not a multiple of network_settings.memory.sequence_length "
        "(64); each minibatch is 1 whole sequence(s), 64 steps" in caplog.text
    )


def test_at_least_one_reward_signal_and_gail_demo_path() -> None:
    assert error_of({"behaviors": {"A": {"reward_signals": {}}}}) == (
        "behaviors.A.reward_signals: at least one reward signal is required (e.g. extrinsic: {})"
    )
    assert error_of({"behaviors": {"A": {"reward_signals": {"gail": {"demo_path": ""}}}}}) == (
        "behaviors.A.reward_signals.gail.demo_path: gail requires a demo_path (a .demo file or folder)"
    )


def test_num_envs_allowed_with_env_path() -> None:
    options = structure_run_options({"env_settings": {"env_path": "builtin:3DBall", "num_envs": 4}})
    assert options.env_settings.num_envs == 4


def test_buffer_not_multiple_of_batch_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        options = load_run_options(CONFIGS / "ppo/3DBall.yaml")
    assert options.behaviors["3DBall"].hyperparameters.buffer_size == 12000
    assert (
        "behaviors.3DBall: buffer_size (12000) is not a multiple of batch_size (64); "
        "each epoch leaves 32 steps out of its minibatches"
    ) in caplog.messages


def test_curriculum_rules() -> None:
    lesson = {"name": "L", "value": 1.0}
    crit = {"behavior": "A", "measure": "progress", "threshold": 0.5}
    message = error_of(
        {
            "behaviors": {"A": {}},
            "environment_parameters": {
                "p": {
                    "curriculum": [
                        lesson,
                        {"name": "M", "value": 2.0, "completion_criteria": {**crit, "threshold": 1.5}},
                        {"name": "O", "value": 2.5, "completion_criteria": {**crit, "behavior": "Nobody"}},
                        {
                            "name": "N",
                            "value": {
                                "sampler_type": "uniform",
                                "sampler_parameters": {"min_value": 3, "max_value": 1},
                            },
                        },
                    ]
                },
                "q": {
                    "sampler_type": "multirangeuniform",
                    "sampler_parameters": {"intervals": [[0, 1], [5, 4]]},
                },
                "r": {"sampler_type": "gaussian", "sampler_parameters": {"mean": 0, "st_dev": -1}},
            },
        }
    )
    assert {line.strip() for line in message.splitlines()[1:]} == {
        "environment_parameters.p.curriculum.0 (L): completion_criteria are required on every lesson but the last",
        "environment_parameters.p.curriculum.1.completion_criteria.threshold: must be between 0 "
        "and 1 for measure progress (got 1.5)",
        "environment_parameters.p.curriculum.2.completion_criteria.behavior: 'Nobody' is not among the "
        "configured behaviors (A)",
        "environment_parameters.p.curriculum.3.value: min_value (3.0) must not exceed max_value (1.0)",
        "environment_parameters.q.intervals.1: min (5.0) must not exceed max (4.0)",
        "environment_parameters.r.st_dev: must be >= 0 (got -1.0)",
    }


def test_last_lesson_criteria_ignored_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    crit = {"behavior": "A", "measure": "reward", "threshold": 0.5}
    with caplog.at_level(logging.WARNING):
        options = structure_run_options(
            {
                "behaviors": {"A": {}},
                "environment_parameters": {
                    "p": {
                        "curriculum": [
                            {"name": "L0", "value": 1, "completion_criteria": crit},
                            {"name": "L1", "value": 2, "completion_criteria": crit},
                        ]
                    }
                },
            }
        )
    assert options.environment_parameters["p"].curriculum[1].completion_criteria is not None
    assert (
        "environment_parameters.p.curriculum.1 (L1): the last lesson's completion_criteria are ignored"
    ) in caplog.messages


def test_environment_parameter_shape_errors() -> None:
    assert error_of({"environment_parameters": {"b": {"x": 1}}}) == (
        "environment_parameters.b: expected a number, a sampler {sampler_type, sampler_parameters} "
        "or {curriculum: [lessons]}, got keys x"
    )
    assert error_of(
        {"environment_parameters": {"d": {"sampler_type": "gaussian", "sampler_parameters": {"stdev": 2}}}}
    ) == ("environment_parameters.d.sampler_parameters.stdev: unknown key (did you mean st_dev?)")
    assert error_of({"environment_parameters": {"d": {"sampler_type": "unifrom"}}}) == (
        "environment_parameters.d.sampler_type: expected one of constant, uniform, gaussian, "
        "multirangeuniform, got 'unifrom' (str) (did you mean uniform?)"
    )


# ---------------------------------------------------------------- default_settings


def test_default_settings_are_deep_merged_under_every_behavior() -> None:
    options = load_run_options(CONFIGS / "ppo/Match3.yaml")
    simple = options.behaviors["Match3SimpleHeuristic"]
    # Own keys win...
    assert simple.network_settings.hidden_units == 4 and simple.network_settings.num_layers == 1
    # ...inside a section the others come from default_settings, not from the defaults.
    assert simple.network_settings.vis_encode_type is EncoderType.MATCH3
    assert simple.network_settings.normalize is True
    assert simple.hyperparameters.beta == 0.005 and simple.hyperparameters.lambd == 0.99
    assert simple.hyperparameters.learning_rate_schedule is ScheduleType.CONSTANT
    assert simple.time_horizon == 128
    assert options.default_settings.network_settings.hidden_units == 256


def test_default_settings_merge_adds_reward_signals_and_respects_trainer_type() -> None:
    options = structure_run_options(
        {
            "default_settings": {
                "hyperparameters": {"beta": 0.1, "batch_size": 32, "buffer_size": 64},
                "reward_signals": {"extrinsic": {"gamma": 0.9}},
            },
            "behaviors": {
                "P": {"reward_signals": {"curiosity": {"strength": 0.1}}},
                "S": {"trainer_type": "sac"},
            },
        }
    )
    p = options.behaviors["P"]
    assert set(p.reward_signals) == {RewardSignalType.EXTRINSIC, RewardSignalType.CURIOSITY}
    assert p.reward_signals["extrinsic"].gamma == 0.9 and p.hyperparameters.beta == 0.1
    s = options.behaviors["S"].hyperparameters
    # A SAC behavior inherits the default hyperparameters SAC has, not PPO's beta.
    assert isinstance(s, SACSettings) and (s.batch_size, s.buffer_size) == (32, 64)


def test_errors_in_default_settings_are_reported_once() -> None:
    assert error_of({"default_settings": {"hyperparameters": {"batchsize": 1}}, "behaviors": {"A": {}, "B": {}}}) == (
        "default_settings.hyperparameters.batchsize: unknown key (did you mean batch_size?)"
    )


# ---------------------------------------------------------------- behaviors by name


def test_behavior_settings_by_name() -> None:
    options = load_run_options(CONFIGS / "ppo/3DBall.yaml")
    assert options.behavior_settings("3DBall") is options.behaviors["3DBall"]
    assert options.behavior_settings("3DBall?team=0") is options.behaviors["3DBall"]
    with pytest.raises(ConfigError) as info:
        options.behavior_settings("Walker?team=0")
    assert str(info.value) == (
        "behavior 'Walker' is not in the run configuration (configured: 3DBall); add it under "
        "'behaviors:' or add 'default_settings:' for behaviors not listed"
    )


def test_unknown_behavior_gets_default_settings_when_present() -> None:
    options = load_run_options(CONFIGS / "ppo/Match3.yaml")
    assert options.behavior_settings("Other") == options.default_settings


def test_without_a_config_file_every_behavior_gets_the_defaults(caplog: pytest.LogCaptureFixture) -> None:
    options = load_run_options(None)
    assert options.config_specified is False
    with caplog.at_level(logging.WARNING):
        assert options.behavior_settings("Anything") == TrainerSettings()
    assert "Anything" in caplog.text


# ---------------------------------------------------------------- plugins


@attrs.frozen(kw_only=True)
class MyHyperparameters:
    batch_size: int = 16
    buffer_size: int = 256
    temperature: float = 1.0


def test_plugin_trainer_type_structures_through_the_registry() -> None:
    types = {**builtin_hyperparameter_types(), "mine": MyHyperparameters}
    data = {"behaviors": {"A": {"trainer_type": "mine", "hyperparameters": {"temperature": "0.5"}}}}
    options = structure_run_options(data, hyperparameter_types=types)
    assert options.behaviors["A"].hyperparameters == MyHyperparameters(temperature=0.5)
    assert structure_run_options(unstructure_run_options(options), hyperparameter_types=types) == options
    assert str(
        pytest.raises(
            ConfigError,
            structure_run_options,
            {"behaviors": {"A": {"trainer_type": "mine", "hyperparameters": {"temperatur": 1}}}},
            hyperparameter_types=types,
        ).value
    ) == ("behaviors.A.hyperparameters.temperatur: unknown key (did you mean temperature?)")
    # Cross-field rules apply to a plugin's batch/buffer too.
    assert "batch_size (512) must not exceed buffer_size (256)" in str(
        pytest.raises(
            ConfigError,
            structure_run_options,
            {"behaviors": {"A": {"trainer_type": "mine", "hyperparameters": {"batch_size": 512}}}},
            hyperparameter_types=types,
        ).value
    )
    # The built-in registry is untouched: no global state.
    with pytest.raises(UnknownTrainerTypeError):
        structure_run_options(data)
    assert "mine" not in builtin_hyperparameter_types()


# ---------------------------------------------------------------- writing back


def test_configuration_yaml_is_plain_and_complete(tmp_path: Path) -> None:
    options = load_run_options(CONFIGS / "ppo/3DBall.yaml")
    path = tmp_path / "results" / "ball" / "configuration.yaml"
    write_configuration(options, path)
    written = yaml.safe_load(path.read_text())
    assert list(written) == [
        "behaviors",
        "default_settings",
        "environment_parameters",
        "env_settings",
        "engine_settings",
        "checkpoint_settings",
        "torch_settings",
        "debug",
    ]
    ball = written["behaviors"]["3DBall"]
    assert ball["hyperparameters"]["batch_size"] == 64
    assert ball["hyperparameters"]["learning_rate_schedule"] == "linear"
    assert ball["reward_signals"]["extrinsic"]["gamma"] == 0.99
    assert written["env_settings"]["seed"] == -1


finite = st.floats(min_value=1e-6, max_value=1e3, allow_nan=False, allow_infinity=False)


@settings(max_examples=40, deadline=None)
@given(
    batch=st.integers(1, 512),
    extra=st.integers(0, 4096),
    lr=finite,
    beta=finite,
    schedule=st.sampled_from([None, "constant", "linear"]),
    max_steps=st.integers(0, 10**9),
    gamma=st.floats(min_value=0.01, max_value=0.999),
    hidden=st.integers(1, 1024),
)
def test_round_trip_property(batch, extra, lr, beta, schedule, max_steps, gamma, hidden) -> None:
    data = {
        "behaviors": {
            "B": {
                "hyperparameters": {
                    "batch_size": batch,
                    "buffer_size": batch + extra,
                    "learning_rate": lr,
                    "beta": beta,
                    "beta_schedule": schedule,
                },
                "network_settings": {"hidden_units": hidden},
                "reward_signals": {"extrinsic": {"gamma": gamma}},
                "max_steps": max_steps,
            }
        }
    }
    options = structure_run_options(data)
    again = structure_run_options(yaml.safe_load(yaml.safe_dump(unstructure_run_options(options))))
    assert again == options
    assert math.isclose(again.behaviors["B"].hyperparameters.learning_rate, lr)
