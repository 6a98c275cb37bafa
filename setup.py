"""ament_python / setuptools build script for youbot_dynamics."""
import os
import runpy
from glob import glob

from setuptools import find_packages, setup

package_name = 'youbot_dynamics'
here = os.path.dirname(os.path.abspath(__file__))
# the controllers' executables come from their registry (plain data, readable before the install)
CONTROLLERS = runpy.run_path(os.path.join(here, package_name, 'contract', 'controller_registry.py'))['CONTROLLERS']


def _files(*patterns):
    """Sorted, de-duplicated, repo-relative files matching the patterns (empty/missing dirs are fine)."""
    found = set()
    for pattern in patterns:
        for path in glob(os.path.join(here, pattern)):
            if os.path.isfile(path):
                found.add(os.path.relpath(path, here))
    return sorted(found)


data_files = [
    ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
    ('share/' + package_name, ['package.xml']),
]
for dest, patterns in (
    ('launch', ('launch/*.launch.py',)),
    ('config', ('config/*.yaml',)),
    ('urdf', ('urdf/*.urdf', 'urdf/*.xacro')),
):
    files = _files(*patterns)
    if files:
        data_files.append((os.path.join('share', package_name, dest), files))

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*']),
    data_files=data_files,
    # the nodes' parameter schemas (youbot_dynamics.contract.parameter_schema), read at run time
    package_data={package_name + '.nodes': ['parameters/*.yaml']},
    # rclpy and the message packages come from the ROS 2 install (system or wheels),
    # so they are deliberately not listed here.
    install_requires=['setuptools', 'numpy', 'scipy', 'sympy', 'PyYAML', 'numba', 'mujoco', 'cvxpy', 'clarabel',
                      'scs', 'rosbags>=0.10,<0.12', 'matplotlib',
                      'pysoem'],  # EtherCAT master of youbot_driver (manylinux wheels; imported only when used)
    zip_safe=True,
    maintainer='youbot_dynamics developers',
    maintainer_email='dev@example.com',
    description='Kinematics and dynamics for the KUKA youBot with ROS 2 nodes.',
    license='Apache-2.0',
    python_requires='>=3.10',
    extras_require={'test': ['pytest', 'pytest-timeout']},
    entry_points={
        'console_scripts': [
            'youbot-dynamics = youbot_dynamics.cli:main',
            'kinematics_node = youbot_dynamics.nodes.kinematics_node:main',
            'sim_node = youbot_dynamics.nodes.sim_node:main',
            'external_torque_observer = youbot_dynamics.nodes.external_torque_observer:main',
            'identification_node = youbot_dynamics.nodes.identification_node:main',
            'youbot_driver = youbot_dynamics.nodes.youbot_driver:main',
            *(entry.entry_point for entry in CONTROLLERS),
        ],
    },
)
