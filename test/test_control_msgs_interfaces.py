"""The ``control_msgs`` interfaces the FollowJointTrajectory server uses (the action and the two messages
its goal names) are the published ones: each type's RIHS01 hash, as installed and as the type support
sends it, equals the one ros-controls/control_msgs generates (recorded below).

Where no control_msgs is installed (CI: it is on no PyPI registry) ``make setup`` builds the test-only
one of test/interfaces/control_msgs, its definitions those of control_msgs 6.8.0 field for field; a
real control_msgs, where installed, wins (tools/build_interfaces.py ``--unless-installed``, tested here
too; doc/control.md, "FollowJointTrajectory").
"""
from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import build_interfaces  # noqa: E402

# The RIHS01 hashes of ros-controls/control_msgs 6.8.0 (Kilted and Rolling, branch master), measured once
# from the real package: its source at tag 6.8.0, configured with CMake against the ROS 2 Kilted wheels
# (the build environment of tools/build_interfaces.py plus ros-sensor-msgs and ros-diagnostic-msgs, which
# its other messages need), target control_msgs__rosidl_generator_type_description built, the hashes read
# from the "type_hashes" of rosidl_generator_type_description/control_msgs/{action,msg}/*.json. The same
# since 6.3.0 (the feedback's index and multi_dof_index); control_msgs 5.x (Jazzy) has other ones.
PUBLISHED = {
    "control_msgs/action/FollowJointTrajectory":
        "RIHS01_ff29901b2693f5deb847e96084a1c2cdb26e70b7c847be21859b70a55fb29cf0",
    "control_msgs/action/FollowJointTrajectory_Goal":
        "RIHS01_8a9060704b269608f5a340934cc26e66869dd14bdac29e2e7fd9ec8b9882d205",
    "control_msgs/action/FollowJointTrajectory_Result":
        "RIHS01_8002e99ed2c14c6faa522f2a93c26d744c5982f254f9e98ff9c6f19789bdb220",
    "control_msgs/action/FollowJointTrajectory_Feedback":
        "RIHS01_0bb018d181bdc6384dd75365480967bd1d6eaee4ef3dd597c64cd0b8bdc10867",
    "control_msgs/action/FollowJointTrajectory_FeedbackMessage":
        "RIHS01_95618cc73912d99b9acaa17d2da5e832cb0bfdeede7534fa8ec600feca2a6c4b",
    "control_msgs/action/FollowJointTrajectory_SendGoal":
        "RIHS01_b13789dddc325a7a962825c45e28c77d37237ec129dd0c34dc5994562938c57f",
    "control_msgs/action/FollowJointTrajectory_SendGoal_Request":
        "RIHS01_179c93691f1f6d1d115881ff88c3917b7cc6eac2ba4bf56766cc7c4389e19ef1",
    "control_msgs/action/FollowJointTrajectory_SendGoal_Response":
        "RIHS01_e6a48ba740ae254500129a877f0b071be8663a115da1a539b74599cc97921fbf",
    "control_msgs/action/FollowJointTrajectory_SendGoal_Event":
        "RIHS01_906dd566308db02673c73c654f69bdd84738589629c1bc2841ddb49059ed1c6f",
    "control_msgs/action/FollowJointTrajectory_GetResult":
        "RIHS01_e3ceb38e3e1867c8dc0f46014df26e90eb93422f27e9e97f936e07f94be4bc8b",
    "control_msgs/action/FollowJointTrajectory_GetResult_Request":
        "RIHS01_ecf7ea8463d3beec7084bca75216d0b01b87b6e1e4e09679bb26093041efcbe9",
    "control_msgs/action/FollowJointTrajectory_GetResult_Response":
        "RIHS01_08eefbaa146ce02ba45898d5e99160afd6c4c54a30d159aee0f2ca6035b1580f",
    "control_msgs/action/FollowJointTrajectory_GetResult_Event":
        "RIHS01_43161a489e52daaa5bbc2fa74f73f1804d099574fcf8f819170807d75472662a",
    "control_msgs/msg/JointTolerance":
        "RIHS01_c254f9cece0f3b733017b6990fd46d1326e25242d6b8844398c97d9a88e7d648",
    "control_msgs/msg/JointComponentTolerance":
        "RIHS01_739ea7566931944d33830fa10f1bf5e7a7fbdc3172bce7a7eaac642bd6e3ffa4",
}
FIRST_WITH_THESE = (6, 3, 0)  # the first control_msgs release with these hashes
SOURCE = ROOT / "test" / "interfaces" / "control_msgs"


def installed() -> tuple[Path, str]:
    """The share folder of the importable control_msgs and its package.xml (the test-only one in CI)."""
    module = pytest.importorskip("control_msgs.action")
    share = Path(module.__file__).resolve().parents[5] / "share" / "control_msgs"
    xml = share / "package.xml"
    assert xml.exists(), f"no {xml} beside the control_msgs imported from {module.__file__}"
    return share, xml.read_text()


def skip_unless_hashes_apply(xml: str) -> None:
    """Skip for a real control_msgs older than :data:`FIRST_WITH_THESE` (other definitions, other hashes)."""
    if build_interfaces.TEST_ONLY in xml:
        return
    version = tuple(int(v) for v in re.search(r"<version>\s*(\d+)\.(\d+)\.(\d+)", xml).groups())
    if version < FIRST_WITH_THESE:
        pytest.skip(f"a real control_msgs {'.'.join(map(str, version))} is installed: older than the definitions "
                    f"whose hashes are recorded")


def test_installed_type_hashes_are_the_published_ones():
    share, xml = installed()
    skip_unless_hashes_apply(xml)
    found = {}
    for name in ("action/FollowJointTrajectory", "msg/JointTolerance", "msg/JointComponentTolerance"):
        description = json.loads((share / f"{name}.json").read_text())
        found.update({h["type_name"]: h["hash_string"] for h in description["type_hashes"]
                      if h["type_name"].startswith("control_msgs/")})
    assert found == PUBLISHED


@pytest.mark.ros
def test_type_support_hashes_are_the_published_ones():
    """What the type support (compiled into the package's libraries) sends with each message over DDS."""
    _, xml = installed()
    skip_unless_hashes_apply(xml)
    rclpy = pytest.importorskip("rclpy")
    from control_msgs.action import FollowJointTrajectory
    from control_msgs.msg import JointComponentTolerance, JointTolerance
    from conftest import local_ros_domain, ros_domain_id
    types = {"control_msgs/msg/JointTolerance": JointTolerance,
             "control_msgs/msg/JointComponentTolerance": JointComponentTolerance,
             "control_msgs/action/FollowJointTrajectory_FeedbackMessage": FollowJointTrajectory.Impl.FeedbackMessage,
             "control_msgs/action/FollowJointTrajectory_Goal": FollowJointTrajectory.Goal,
             "control_msgs/action/FollowJointTrajectory_Result": FollowJointTrajectory.Result}
    with local_ros_domain(ros_domain_id(__file__)):
        context = rclpy.Context()
        rclpy.init(context=context)
        try:
            node = rclpy.create_node("control_msgs_hashes", context=context)
            topics = {name: f"/hash_{i}" for i, name in enumerate(types)}
            for name, cls in types.items():
                node.create_publisher(cls, topics[name], 1)
            found: dict[str, str] = {}
            deadline = time.monotonic() + 5.0
            while len(found) < len(types) and time.monotonic() < deadline:
                for name, topic in topics.items():
                    infos = node.get_publishers_info_by_topic(topic)
                    if infos:
                        found[name] = str(infos[0].topic_type_hash)
                time.sleep(0.05)
            node.destroy_node()
        finally:
            rclpy.shutdown(context=context)
    assert found == {name: PUBLISHED[name] for name in types}


def test_definitions_name_their_source():
    """Each definition of the test-only package says where it came from (repository, tag, path), and
    the package builds exactly those."""
    files = sorted(p.relative_to(SOURCE).as_posix() for p in SOURCE.glob("*/*.*"))
    assert files == ["action/FollowJointTrajectory.action", "msg/JointComponentTolerance.msg",
                     "msg/JointTolerance.msg"]
    for name in files:
        first = (SOURCE / name).read_text().splitlines()[0]
        assert first == f"# From ros-controls/control_msgs, tag 6.8.0 (Kilted and Rolling: branch master), " \
                        f"file control_msgs/{name},"
        assert f'"{name}"' in (SOURCE / "CMakeLists.txt").read_text()
    assert build_interfaces.TEST_ONLY in (SOURCE / "package.xml").read_text()
    assert (SOURCE.parent / "COLCON_IGNORE").exists()  # never built by colcon: a real control_msgs wins


def test_a_real_package_wins(tmp_path, monkeypatch):
    """``--unless-installed`` builds where the venv imports no such package or a test-only build of it and
    leaves a real one alone."""
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    (site / "fake_msgs").mkdir(parents=True)
    (site / "fake_msgs" / "__init__.py").write_text("")
    share = tmp_path / "share" / "fake_msgs"
    share.mkdir(parents=True)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    python = Path(sys.executable)
    assert build_interfaces.installed_elsewhere(python, "no_such_msgs") == ""
    assert build_interfaces.installed_elsewhere(python, "fake_msgs") == str(site / "fake_msgs")  # no package.xml
    (share / "package.xml").write_text("<package><name>fake_msgs</name><description>real</description></package>")
    assert build_interfaces.installed_elsewhere(python, "fake_msgs") == str(site / "fake_msgs")
    (share / "package.xml").write_text(f"<package><description>{build_interfaces.TEST_ONLY}</description></package>")
    assert build_interfaces.installed_elsewhere(python, "fake_msgs") == ""
