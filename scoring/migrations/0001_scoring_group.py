from django.db import migrations


def create_group(apps, schema_editor):
    """The scoring role's group, so staff can add users to it in the admin."""
    apps.get_model("auth", "Group").objects.get_or_create(name="scoring")


class Migration(migrations.Migration):
    dependencies = [("auth", "0012_alter_user_first_name_max_length")]

    operations = [migrations.RunPython(create_group, migrations.RunPython.noop)]
